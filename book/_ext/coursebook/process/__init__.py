"""The build process itself: errors reported once, Ctrl-C, the garbage collector, the
preview's last good pages, a quiet log."""
