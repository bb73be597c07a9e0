"""The Lua sandbox (gitops.health.lua): a hostile or broken Argo CD health script yields
"rule failed: …" within a bounded time and touches nothing outside its own runtime."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitops.health.lua import LuaLimits, evaluate_lua
from gitops.rows import HEALTHY, UNKNOWN
from tests.gitops.decisionmodel import decision_model

OBJ = decision_model("Ready")
# Far above what any case below needs when the limits work; far below "hangs the worker".
BOUND_SECONDS = 5.0


def run(script: str, **kwargs: object) -> tuple[str, str, bool, float]:
    started = time.monotonic()
    outcome = evaluate_lua(script, OBJ, **kwargs)  # type: ignore[arg-type]
    return outcome.status, outcome.message, outcome.failed, time.monotonic() - started


HOSTILE = {
    "infinite loop": ("while true do end", {}, "rule failed: instruction limit exceeded"),
    "loop that catches the limit": (
        "while true do pcall(function() while true do end end) end",
        {},
        "rule failed: instruction limit exceeded",
    ),
    "handler that loops": (
        "xpcall(function() error('x') end, function() while true do end end)",
        {},
        "rule failed: instruction limit exceeded",
    ),
    "unbounded tables": (
        "local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i} end",
        {},
        "rule failed: memory limit exceeded (32 MiB)",
    ),
    "one huge string": (
        "local s = string.rep('x', 2^30) return {status = 'Healthy'}",
        {"use_open_libs": True},
        "rule failed: memory limit exceeded (32 MiB)",
    ),
    "an empty string repeated forever": (
        "local s = string.rep('', 1e15) while true do end",
        {"use_open_libs": True},
        "rule failed: instruction limit exceeded",
    ),
    "os.execute": (
        "os.execute('touch /tmp/lua-sandbox-pwned') return {status = 'Healthy'}",
        {},
        "rule failed: health.lua:1: attempt to call field 'execute' (a nil value)",
    ),
    "io.open": (
        "local f = io.open('/etc/passwd') return {status = 'Healthy'}",
        {},
        "rule failed: health.lua:1: attempt to index global 'io' (a nil value)",
    ),
    "io even with open libs": (
        "local f = io.open('/etc/passwd') return {status = 'Healthy'}",
        {"use_open_libs": True},
        "rule failed: health.lua:1: attempt to index global 'io' (a nil value)",
    ),
    "require": (
        "local io = require('io') return {status = 'Healthy'}",
        {},
        "rule failed: health.lua:1: module 'io' not found",
    ),
    "bytecode": (
        "local f, err = loadstring('\\27Lua') error(err)",
        {},
        "rule failed: health.lua:1: binary chunks are not allowed",
    ),
    "getfenv": (
        "return getfenv(0).io",
        {},
        "rule failed: health.lua:1: attempt to call global 'getfenv' (a nil value)",
    ),
    "costly pattern": (
        "string.find(string.rep('a', 5000), 'a-a-a-a-b') return {status = 'Healthy'}",
        {"use_open_libs": True},
        "rule failed: health.lua:1: pattern too costly for a subject of 5000 bytes",
    ),
    "runtime error": (
        "return {status = obj.status.missing.field}",
        {},
        "rule failed: health.lua:1: attempt to index field 'missing' (a nil value)",
    ),
    "syntax error": ("hs = {", {}, "rule failed: health.lua:1: unexpected symbol near <eof>"),
    # Lua 5.2's stack may grow to a million slots: the memory cap stops it first.
    "endless recursion": (
        "local function f() return f() + 1 end return f()",
        {},
        "rule failed: memory limit exceeded (32 MiB)",
    ),
    "a number": ("return 42", {}, "rule failed: expect table output from Lua script, not number"),
    "a status that is no health word": (
        "return {status = 'Fine'}",
        {},
        "rule failed: Lua returned an invalid health status",
    ),
    "a numeric status": ("return {status = 1}", {}, "rule failed: status is a number, not a string"),
    "nothing": ("local x = 1", {}, "rule failed: the script returned no health status"),
    "an empty table": ("return {}", {}, "rule failed: the script returned no health status"),
    "an error object with a looping __tostring": (
        "error(setmetatable({}, {__tostring = function() while true do end end}))",
        {},
        "rule failed: the script raised a table value",
    ),
    "empty script": ("  ", {}, "rule failed: the health script is empty"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_or_broken_script_fails_the_rule_in_bounded_time(case: str) -> None:
    script, kwargs, expected = HOSTILE[case]
    status, message, failed, elapsed = run(script, **kwargs)
    assert failed and status == UNKNOWN
    assert message.startswith(expected), message
    assert elapsed < BOUND_SECONDS
    assert not Path("/tmp/lua-sandbox-pwned").exists()


def test_wall_clock_limit_stops_slow_work_the_instruction_count_allows() -> None:
    # Each instruction here is a big string copy: the count stays low, the clock runs.
    script = "local s = string.rep('x', 4000000) while true do local t = s .. 'y' end"
    limits = LuaLimits(max_instructions=10**12, timeout_seconds=0.2, max_memory_bytes=64 * 1024 * 1024)
    status, message, failed, elapsed = run(script, use_open_libs=True, limits=limits)
    assert failed and message == "rule failed: time limit exceeded"
    assert elapsed < BOUND_SECONDS


@pytest.mark.parametrize(
    ("probe", "open_libs"),
    [
        ("type(loadstring('return io')())", False),  # compiled code lands in the same sandbox
        (
            "type(load((function() local n = 0 return function() n = n + 1 "
            "if n == 1 then return 'return io' end end end)())())",
            False,
        ),
        ("tostring(getmetatable(''))", True),  # the string metatable is locked
        ("type(_G.io) .. type(_G.debug) .. type(_G.package) .. type(_G.coroutine)", True),
        ("type(os.execute) .. type(os.getenv) .. type(os.remove)", True),
    ],
)
def test_nothing_outside_the_sandbox_is_reachable(probe: str, open_libs: bool) -> None:
    outcome = evaluate_lua(f"return {{status = 'Healthy', message = {probe}}}", OBJ, use_open_libs=open_libs)
    assert not outcome.failed, outcome.message
    assert outcome.message in ("nil", "false", "nilnilnilnil", "nilnilnil")


def test_string_methods_need_open_libs_as_in_argocd() -> None:
    closed = evaluate_lua("return {status = ('healthy'):gsub('h', 'H')}", OBJ)
    assert closed.failed and "attempt to call method 'gsub'" in closed.message
    opened = evaluate_lua("return {status = (('healthy'):gsub('^h', 'H'))}", OBJ, use_open_libs=True)
    assert (opened.status, opened.failed) == (HEALTHY, False)


def test_script_size_is_bounded() -> None:
    script = "return {status = 'Healthy'}" + " " * 70_000
    assert run(script)[1] == "rule failed: the health script is longer than 65536 characters"


def test_safe_os_and_the_obj_global_work_as_in_argocd() -> None:
    script = """
      local os = require("os")
      local year = os.date("!%Y", os.time({year = 2026, month = 6, day = 1, hour = 12}))
      return {status = "Healthy", message = obj.metadata.name .. " " .. year .. " " .. #obj.status.conditions}
    """
    status, message, failed, _ = run(script)
    assert (status, message, failed) == (HEALTHY, "support-router 2026 2", False)


def test_pcall_still_catches_ordinary_errors() -> None:
    script = "local ok, err = pcall(function() error('boom', 0) end) return {status = 'Healthy', message = err}"
    assert run(script)[:3] == (HEALTHY, "boom", False)


def test_timestamps_from_yaml_dumps_reach_lua_as_rfc3339_strings() -> None:
    obj = decision_model("Ready")
    obj["metadata"]["creationTimestamp"] = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    outcome = evaluate_lua("return {status = 'Healthy', message = obj.metadata.creationTimestamp}", obj)
    assert (outcome.status, outcome.message) == (HEALTHY, "2026-11-02T10:00:00Z")


def test_python_objects_never_reach_lua() -> None:
    obj = {"apiVersion": "x.io/v1", "kind": "K", "spec": {"callback": os.system}}
    outcome = evaluate_lua("return {status = 'Healthy'}", obj)
    assert outcome.failed and outcome.message.startswith("rule failed: the object cannot be given to Lua")


def test_a_long_message_is_clipped() -> None:
    outcome = evaluate_lua("return {status = 'Degraded', message = string.rep('m', 100000)}", OBJ, use_open_libs=True)
    assert outcome.status == "Degraded" and len(outcome.message) == 1024


def test_goto_continue_runs_as_in_gopher_lua() -> None:
    script = """
      local seen = {}
      for _, condition in ipairs(obj.status.conditions) do
        if condition.status ~= "True" then goto continue end
        seen[#seen + 1] = condition.type
        ::continue::
      end
      return {status = "Healthy", message = table.concat(seen, ",")}
    """
    outcome = evaluate_lua(script, OBJ)
    assert (outcome.status, outcome.failed) == (HEALTHY, False)
    expected = ",".join(c["type"] for c in OBJ["status"]["conditions"] if c["status"] == "True")
    assert outcome.message == expected


def test_lua_51_names_gopher_lua_keeps_are_there_and_numbers_print_as_in_51() -> None:
    probe = (
        "_VERSION .. ' ' .. tostring(4 / 2) .. ' ' .. select(2, unpack({1, 2}))"
        " .. ' ' .. table.getn({1, 2, 3}) .. ' ' .. table.maxn({[7] = 1})"
        " .. ' ' .. math.log10(1000) .. ' ' .. loadstring('return 5')()"
    )
    outcome = evaluate_lua(f"return {{status = 'Healthy', message = {probe}}}", OBJ, use_open_libs=True)
    assert outcome.message == "Lua 5.1 2 2 3 7 3 5"


def test_a_gc_finalizer_cannot_run_after_the_limits_are_off() -> None:
    script = "setmetatable({}, {__gc = function() while true do end end}) return {status = 'Healthy'}"
    status, message, failed, elapsed = run(script)
    assert failed and message == "rule failed: health.lua:1: __gc metamethods are not allowed"
    assert elapsed < BOUND_SECONDS


def test_ordinary_patterns_run_many_times_within_the_limits() -> None:
    # Argo CD's AdvancedCronJob idiom, which the old static guard refused on a timestamp.
    script = """
      local n = 0
      for i = 1, 2000 do
        local y, mo, d, h, mi, s = string.match("2026-12-06T13:25:57Z", "(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)Z")
        for word in string.gmatch("a-b c_d", "[%w_%-]+") do n = n + 1 end
        n = n + #(string.gsub(obj.metadata.name, "%-", "_"))
      end
      return {status = "Healthy", message = tostring(n)}
    """
    # The pattern step bound and the instruction budget are what is tested; the 1 s wall-clock
    # deadline is not. Under CI's eight processes on two slow cores the 6,000 matches took over
    # a second once (2026-12-06), which says nothing of the bounds, so the clock is wider here.
    limits = LuaLimits(timeout_seconds=30.0)
    outcome = evaluate_lua(script, OBJ, use_open_libs=True, limits=limits)
    assert (outcome.status, outcome.failed) == (HEALTHY, False), outcome.message


@pytest.mark.parametrize(
    "pattern_call",
    [
        "string.find(string.rep('a', 70), 'a*a*a*b')",  # just past the step bound
        "string.match(string.rep('x', 40) .. 'y', '.-.-.-.-.-z')",
        "string.gsub(string.rep('(', 3000), '%b()%b()%b()', '')",
        "string.gmatch(string.rep('ab', 2000), '[ab]*[ab]*[ab]*c')",
    ],
)
def test_a_pathological_pattern_is_still_stopped(pattern_call: str) -> None:
    status, message, failed, elapsed = run(
        f"local x = {pattern_call} return {{status = 'Healthy'}}", use_open_libs=True
    )
    assert failed and "pattern too costly" in message, message
    assert elapsed < 0.5


def test_patterns_just_under_the_bound_spend_the_run_time_not_more() -> None:
    # Each call is allowed (about 10 ms of matching); the clock, checked after every call,
    # stops the loop although the instruction count barely moves.
    script = "local s = string.rep('a', 64) while true do string.find(s, 'a*a*a*b') end"
    limits = LuaLimits(max_instructions=10**12, timeout_seconds=0.3)
    status, message, failed, elapsed = run(script, use_open_libs=True, limits=limits)
    assert failed and message == "rule failed: time limit exceeded"
    assert elapsed < 1.0
