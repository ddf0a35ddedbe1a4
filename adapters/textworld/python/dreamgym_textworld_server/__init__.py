"""The TextWorld engine behind a small HTTP server for DreamGym, and the generator of the
cooking-game dataset (``python -m dreamgym_textworld_server.generate``)."""
