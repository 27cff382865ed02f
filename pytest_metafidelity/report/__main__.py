"""``python -m pytest_metafidelity.report merge|html|new-failures ...``"""

from .cli import main

raise SystemExit(main())
