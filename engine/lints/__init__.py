"""Warnings about a crawl (lints, as tokio-console calls them): `lint` is the plain record a
screen, a recording and a report share; `hosts` the warnings drawn from the host rows
(politeness-bound, retry storm); the timing warnings are made by timing/loop_health.py."""
