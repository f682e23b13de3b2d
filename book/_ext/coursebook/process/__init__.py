"""The build process itself: Ctrl-C, the garbage collector, the preview, a quiet log."""
