"""doctor's checks and its report (``checks``), below the ``sandman doctor`` verb (docs/doctor.md)."""
