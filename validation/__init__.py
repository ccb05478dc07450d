"""Validation harnesses of bayes_raters, kept out of the importable library (issue 37): the
simulation-based calibration configurations of every model (``sbc_models``, ``sbc_polytomous``,
``sbc_mirt_facets``; run by ``models/sbc.py`` and ``make validate``) and the planners' checks
(``plan_check`` for the PRMSE planner, ``pairwise_plan_check`` for the pairwise one).

The library never imports this package (``tests/test_layout.py`` checks it), and it is not
installed with the library: it lives in the repository, where ``pytest`` (``pythonpath``),
``models/sbc.py`` and the notebooks find it. Every harness that runs many simulations takes a
``concurrent.futures`` executor (a process pool here; a Dask cluster's
``client.get_executor()`` elsewhere), see :func:`bayes_raters.sbc.run_sbc`.
"""
