#!/usr/bin/env python3
"""Cold and warm latency of analysis tools in one long-lived MCP server.

The first call of a tool in a fresh `flameox mcp serve` process is the
cold one (session, manifests and Parquet footers opened); later calls reuse
the server's per-commit session (warm). Wall time is measured around each
`tools/call` by the stock Python `mcp` client.

usage: mcp_latency.py FLAMEOX_BIN PROJECT_ROOT RUN_ID [TOOL[=JSON_ARGS] ...]
(default tools: analyze_accelerator_launches analyze_pytorch analyze_hotspots;
a tool's arguments are {"target": RUN_ID} unless JSON_ARGS gives them all, e.g.
'analyze_hotspots={"target": "RUN", "start_ns": 0, "end_ns": 5000000}')
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary, project, run_id, tools):
    params = StdioServerParameters(command=binary, args=["mcp", "serve", "--project-root", project])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for spec in tools:
                tool, _, given = spec.partition("=")
                arguments = json.loads(given) if given else {"target": run_id}
                label = tool if not given else f"{tool}({','.join(k for k in arguments if k not in ('target', 'artifact_id'))})"
                times = []
                for _ in range(4):
                    start = time.perf_counter()
                    result = await session.call_tool(tool, arguments)
                    times.append(time.perf_counter() - start)
                    if result.is_error:
                        sys.exit(f"{tool}: {result.structured_content}")
                warm = sorted(times[1:])[len(times[1:]) // 2]
                print(f"{label:<32} first {times[0] * 1000:8.0f} ms   warm median {warm * 1000:8.0f} ms", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    tools = sys.argv[4:] or ["analyze_accelerator_launches", "analyze_pytorch", "analyze_hotspots"]
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], tools))
