#!/usr/bin/env python3
"""Warm latency of trace-window pages at several depths in one MCP server.

Follows `get_trace_window`'s cursor from the first page of [start, end) to
page 10,000 (100 rows a page) and times pages 1, 2, 10, 100, 1,000 and
10,000 three times each (the first call of page 1 is the cold one).

usage: window_pages.py FLAMEOX_BIN PROJECT_ROOT ARTIFACT_ID START_NS END_NS [--relative]
"""

import asyncio
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMED = (1, 2, 10, 100, 1000, 10000)


async def main(binary, project, artifact, start, end, relative):
    params = StdioServerParameters(command=binary, args=["mcp", "serve", "--project-root", project])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            base = {"target": artifact, "start_ns": start, "end_ns": end,
                    "relative": relative, "limit": 100}
            times = {}
            cursor = None
            for page in range(1, TIMED[-1] + 1):
                arguments = dict(base, cursor=cursor) if cursor else base
                for _ in range(3 if page in TIMED else 1):
                    began = time.perf_counter()
                    result = await session.call_tool("get_trace_window", arguments)
                    times.setdefault(page, []).append(time.perf_counter() - began)
                    if result.is_error:
                        sys.exit(f"page {page}: {result.structured_content}")
                cursor = (result.structured_content.get("result") or {}).get("next_cursor")
                if not cursor:
                    print(f"the window ends at page {page}")
                    break
            for page in TIMED:
                if page in times:
                    t = sorted(times[page])
                    print(f"page {page:>6} (from row {(page - 1) * 100:>9}): "
                          + " / ".join(f"{x * 1000:.0f}" for x in times[page])
                          + f" ms, median {t[1] * 1000:.0f} ms")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--relative"]
    if len(args) != 5:
        sys.exit(__doc__)
    asyncio.run(main(args[0], args[1], args[2], int(args[3]), int(args[4]), "--relative" in sys.argv))
