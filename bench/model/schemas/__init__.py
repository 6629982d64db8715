"""The JSON Schemas of a run folder's files (data, read by bench/model/file_schemas.py)."""
