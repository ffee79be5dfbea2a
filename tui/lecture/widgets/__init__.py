"""The lecture screens' panels, one per module."""
