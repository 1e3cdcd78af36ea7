"""``perftrack demo``: the whole product on a CPU, against the toy DiT repository whose history
reproduces both incidents (:mod:`run` drives it, :mod:`runner` is its in-process runner,
:mod:`scorecard` judges what was found against what was planted, :mod:`report` prints it)."""
