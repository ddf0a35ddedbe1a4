"""BrowserGym's AX-tree observation, measured on pages for DreamGym's side-by-side benchmark."""
