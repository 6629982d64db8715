"""`rackclock watch`: a rack measured continuously (docs/DESIGN.md, "Watching a rack")."""
