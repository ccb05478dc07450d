"""Polytomous IRT (ordinal items): the graded response and generalized partial credit models.
``model`` (the PyMC model, abilities integrated out), ``answered`` (the exact likelihood of the ability
draws), ``blocks`` (the one-hot pattern product by blocks of items), ``kernel`` (compiled category probabilities),
``fit`` (:func:`fit_polytomous`, :class:`PolytomousResult`), ``simulate``. Card: ``models/irt_polytomous.md``.
"""
