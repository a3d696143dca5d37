"""Harbor's own ATIF validator (harbor.utils.trajectory_validator, from the
harbor wheel on PyPI) on every trajectory file named in argv; prints one
line per file, "ok" or its errors, and exits 1 if any is invalid."""
import sys

from harbor.utils.trajectory_validator import TrajectoryValidator

bad = 0
for path in sys.argv[1:]:
    v = TrajectoryValidator()
    if v.validate(path):
        print(f"ok {path}")
    else:
        bad += 1
        print(f"INVALID {path}: {'; '.join(v.errors)}")
sys.exit(1 if bad else 0)
