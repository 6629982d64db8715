"""The operators' logs read into device stamps: each format's parser, format detection, bounded
file reading, and which clock stamped a line. Imports only the base layer (and numpy)."""
