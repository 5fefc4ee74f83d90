"""A stock MCP client (the Python `mcp` SDK's stdio client) drives flameox.

Usage: python python_stdio_client.py <flameox-binary> <trace-file>

It starts `flameox mcp serve --init` in a scratch project, lists the tools
(they must equal what `flameox mcp inspect --json` prints),
imports the trace (copied into the project), and calls analyze_hotspots. It
exits non-zero with a message on the first thing that is not as expected.
Run by `.ci/run` in a virtualenv it creates (see docs/mcp.md).
"""

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def advertised_tools(binary: str) -> set:
    """The tool names `flameox mcp inspect --json` prints, rendered from the
    same operation catalog the server lists; the stdio server must agree."""
    out = subprocess.run(
        [binary, "mcp", "inspect", "--json"], check=True, capture_output=True, text=True
    ).stdout
    return {tool["name"] for tool in json.loads(out)["tools"]}


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def envelope(result, tool: str) -> dict:
    if result.is_error:
        fail(f"{tool} returned an error: {result.structured_content}")
    body = result.structured_content
    if not body or body.get("ok") is not True or body.get("schema_version") != 1:
        fail(f"{tool}: unexpected envelope {body}")
    line = result.content[0].text
    if not line.startswith(f"[{tool}:") or "tok" not in line:
        fail(f"{tool}: summary line {line!r}")
    return body["result"]


async def main(binary: str, trace: str) -> None:
    with tempfile.TemporaryDirectory() as project:
        name = Path(trace).name
        shutil.copy(trace, Path(project) / name)
        params = StdioServerParameters(
            command=binary,
            args=["mcp", "serve", "--init", "--project-root", project],
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                if init.server_info.name != "flameox":
                    fail(f"server name {init.server_info.name}")
                tools = await session.list_tools()
                names = {tool.name for tool in tools.tools}
                expected = advertised_tools(binary)
                if names != expected or len(names) < 40:
                    fail(f"tools differ from mcp inspect: {sorted(names ^ expected)} ({len(names)} listed)")
                for tool in tools.tools:
                    if tool.output_schema is None or tool.annotations is None:
                        fail(f"{tool.name} lacks an output schema or annotations")

                imported = envelope(
                    await session.call_tool("import_artifact", {"path": name}),
                    "import_artifact",
                )
                hot = envelope(
                    await session.call_tool(
                        "analyze_hotspots", {"target": imported["run_id"], "limit": 3}
                    ),
                    "analyze_hotspots",
                )
                if hot["returned"] != 3 or not hot["rows"]:
                    fail(f"hotspots: {json.dumps(hot)[:300]}")
                top = hot["rows"][0]
                print(
                    f"python mcp client: {len(names)} tools; top frame "
                    f"{top['function']!r} self {top['self_value']} of metric {hot['metric']}"
                )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        fail("usage: python_stdio_client.py <flameox-binary> <trace-file>")
    asyncio.run(main(sys.argv[1], sys.argv[2]))
