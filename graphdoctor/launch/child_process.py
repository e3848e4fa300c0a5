"""How ``graphdoctor run`` starts the recording child: the module it runs, and the variable
that carries the child's settings (a JSON object) from the parent to it."""

from __future__ import annotations

CHILD_ENV = "GRAPHDOCTOR_CHILD"
# Named, not imported: importing the child's module would import the recorder into the parent.
CHILD_MODULE = "graphdoctor.record.child"
