"""Binary IRT (right/wrong answers): 1PL/2PL/3PL/4PL. ``model`` (the PyMC model, joint form),
``marginal`` (abilities integrated out on a quadrature rule), ``fit`` (:func:`fit_irt`, :class:`IRTResult`),
``simulate`` (answers with planted bad items). Card: ``models/irt.md``.
"""
