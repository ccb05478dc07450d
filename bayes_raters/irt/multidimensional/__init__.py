"""Multidimensional (compensatory) 2PL/3PL: ``model`` (the PyMC model on a quadrature ball),
``fit`` (``fit_irt(dims=...)``'s path, :class:`MultidimensionalIRTResult`), ``simulate`` (answers with
a simple structure). Card: ``models/irt_multidimensional.md``.
"""
