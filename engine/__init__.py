"""The crawl engine: pure asyncio, aiohttp and BeautifulSoup; never imports a UI."""
