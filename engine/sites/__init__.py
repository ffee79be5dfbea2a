"""Web sites served on 127.0.0.1 for demos, lectures and tests: `demo`, deterministic
from a seed with the chapter's redirect cases, and `hostile`, what a real crawler meets."""
