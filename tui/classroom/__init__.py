"""A class in browsers: one screen process in a pseudo-terminal, its output read once and
mirrored to every browser (xterm.js, in static/, with its LICENSE: @xterm/xterm 6.0.0
from the npm registry), a screen model for late joiners, the lecturer's keys to it."""
