"""The engines a command can be asked for by name, apart from the engines themselves, so
a command line can offer them without importing a crawler."""

ENGINES = ("callbacks", "generators", "asyncio")
