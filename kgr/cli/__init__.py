"""The ``kgr`` command line (:mod:`kgr.cli.main`)."""
