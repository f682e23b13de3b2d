"""The build process itself: errors reported once, Ctrl-C, the garbage collector, a
quiet log."""
