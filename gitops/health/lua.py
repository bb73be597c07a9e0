"""Argo CD's Lua health checks, run the way its controller runs them, inside a sandbox.

Argo CD (``util/lua/lua.go``) runs a health script in gopher-lua, a Lua 5.1: the object is
the global ``obj``, the script returns a table ``{status = …, message = …}``, and the
status must be one of Argo CD's health words. By default the VM opens only the base,
table and package libraries plus a "safe" ``os`` holding ``time`` and ``date``
(``require("os")`` gives the same); ``resource.customizations.useOpenLibs.<group_kind>``
opens the standard libraries for one kind. A run is cut off after one second.

Here the script runs in lupa's Lua 5.1 (the same language), in a runtime created for this
one evaluation and thrown away after it, with a per-run environment table that is the
script's only view of the world:

- base functions without file or raw-environment access (no ``dofile``, ``loadfile``,
  ``getfenv``/``setfenv``, ``collectgarbage``, ``module``, ``newproxy``); ``loadstring``
  and ``load`` compile source only (no bytecode) into the same sandbox; ``print`` is
  silent; ``pcall``/``xpcall`` cannot swallow the limits below;
- ``table``, and ``os`` with only ``time`` and ``date``; ``require`` knows only ``"os"``;
- with ``use_open_libs``: ``string`` and ``math``. The instruction count cannot see inside
  one C call, so the pattern functions refuse a match whose backtracking could outlast the
  limits, and ``rep`` of an empty string returns at once. Unlike Argo CD, never ``io``,
  the full ``os``, ``debug``, ``package`` or ``coroutine`` (a coroutine would run outside
  the instruction count): the portal is not the place to grant a script a shell.

Limits: an instruction budget enforced by a count hook, a wall-clock deadline checked by
the same hook (Argo CD's one second), lupa's ``max_memory`` for everything the script
allocates, and a cap on the script's size. Whatever the script does, `evaluate_lua`
returns a `RuleOutcome`; a broken or hostile script gives "rule failed: …".
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import lupa.lua51 as lua51

from gitops.health.sandbox import NotPlainJSON, RuleOutcome, clip, plain_json, rule_failed
from gitops.rows import DEGRADED, HEALTHY, MISSING, PROGRESSING, SUSPENDED, UNKNOWN

# Argo CD's isValidHealthStatusCode.
HEALTH_WORDS = frozenset({HEALTHY, PROGRESSING, DEGRADED, SUSPENDED, MISSING, UNKNOWN})
# Argo CD's own words for a table whose status is not one of them.
INVALID_STATUS = "Lua returned an invalid health status"


@dataclass(frozen=True)
class LuaLimits:
    """How much one health script may use. The defaults allow any real check many times over."""

    max_instructions: int = 10_000_000
    max_memory_bytes: int = 32 * 1024 * 1024
    timeout_seconds: float = 1.0  # Argo CD's context timeout for a Lua run
    max_script_chars: int = 64 * 1024


DEFAULT_LIMITS = LuaLimits()

# The harness runs with the runtime's full libraries, captures what it needs as upvalues,
# and returns the function that builds the sandbox and runs one script in it.
_HARNESS = r"""
local clock = ...
local sethook = debug.sethook
local real_pcall, real_error = pcall, error
local loadstring, setfenv, select, type, rawget, next, unpack =
      loadstring, setfenv, select, type, rawget, next, unpack
local tostring, tonumber, concat = tostring, tonumber, table.concat
local str_find, str_match, str_gmatch, str_gsub, str_sub, str_rep =
      string.find, string.match, string.gmatch, string.gsub, string.sub, string.rep
local STEP = 1000
local MAX_PATTERN_COST = 2e7

local function copy(source, names)
  local out = {}
  for _, name in ipairs(names) do out[name] = source[name] end
  return out
end

-- Lua's matcher backtracks once per quantifier (and %b), so a match costs at most about
-- (#subject + 1) ^ (quantifiers + 1) steps, all inside one C call the hook cannot see.
local function check_pattern(subject, pattern, plain)
  if type(subject) == "number" then subject = tostring(subject) end
  if type(pattern) == "number" then pattern = tostring(pattern) end
  if plain or type(subject) ~= "string" or type(pattern) ~= "string" then return end
  local _, balanced = str_gsub(pattern, "%%b", "")
  local stripped = str_gsub(pattern, "%%.", "")
  local _, quantifiers = str_gsub(stripped, "[%*%+%-%?]", "")
  if (#subject + 1) ^ (quantifiers + balanced + 1) > MAX_PATTERN_COST then
    real_error("pattern too costly for a subject of " .. #subject .. " bytes", 3)
  end
end

local function guarded_string()
  local s = copy(string, {"byte", "char", "format", "len", "lower", "reverse", "sub", "upper"})
  -- rep of a non-empty string meets the memory limit; of "" it would spin in C for n steps.
  s.rep = function(subject, n)
    if subject == "" then return "" end
    return str_rep(subject, n)
  end
  s.find = function(subject, pattern, init, plain)
    check_pattern(subject, pattern, plain); return str_find(subject, pattern, init, plain)
  end
  s.match = function(subject, pattern, init)
    check_pattern(subject, pattern); return str_match(subject, pattern, init)
  end
  s.gmatch = function(subject, pattern)
    check_pattern(subject, pattern); return str_gmatch(subject, pattern)
  end
  s.gsub = function(subject, pattern, repl, n)
    check_pattern(subject, pattern); return str_gsub(subject, pattern, repl, n)
  end
  return s
end

local math_names = {"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg",
  "exp", "floor", "fmod", "frexp", "huge", "ldexp", "log", "log10", "max", "min", "modf",
  "pi", "pow", "rad", "random", "randomseed", "sin", "sinh", "sqrt", "tan", "tanh"}
local table_names = {"concat", "insert", "maxn", "remove", "sort", "getn"}
local base_names = {"assert", "error", "ipairs", "next", "pairs", "rawequal", "rawget",
  "rawset", "select", "setmetatable", "getmetatable", "tonumber", "tostring", "type",
  "unpack", "_VERSION"}
local safe_os = {time = os.time, date = os.date}
local string_meta = getmetatable("")

return function(source, obj, open_libs, max_instructions, deadline)
  local aborted = nil
  local count = 0
  local env = copy(_G, base_names)
  env._G = env
  env.print = function() end
  env.table = copy(table, table_names)
  env.os = copy(safe_os, {"time", "date"})
  env.require = function(name)
    if name == "os" then return env.os end
    real_error("module '" .. tostring(name) .. "' not found", 2)
  end
  local function rethrow_abort(...)
    if aborted then real_error(aborted, 0) end
    return ...
  end
  env.pcall = function(f, ...) return rethrow_abort(real_pcall(f, ...)) end
  -- The handler runs after the failed call has unwound, not inside the error machinery:
  -- a handler that itself loops is then stopped by the hook like any other code.
  env.xpcall = function(f, handler)
    local function finish(ok, ...)
      if aborted then real_error(aborted, 0) end
      if ok then return true, ... end
      return false, handler((...))
    end
    return finish(real_pcall(f))
  end
  local function compile(text, name)
    if type(text) ~= "string" then real_error("source is a " .. type(text), 3) end
    if str_sub(text, 1, 1) == "\27" then return nil, "binary chunks are not allowed" end
    local chunk, err = loadstring(text, name)
    if chunk then setfenv(chunk, env) end
    return chunk, err
  end
  env.loadstring = function(text, name) return compile(text, name) end
  env.load = function(reader, name)
    local parts = {}
    while true do
      local piece = reader()
      if piece == nil or piece == "" then break end
      if type(piece) ~= "string" then real_error("reader function must return a string", 2) end
      parts[#parts + 1] = piece
    end
    return compile(concat(parts), name)
  end
  local strings = {}
  if open_libs then
    strings = guarded_string()
    env.string = strings
    env.math = copy(math, math_names)
  end
  -- Methods on strings ("x"):upper() go through this metatable: give them the same view.
  string_meta.__index = strings
  string_meta.__metatable = false
  env.obj = obj

  local chunk, err = loadstring(source, "=health.lua")
  if not chunk then return "error", err end
  setfenv(chunk, env)

  local function settle(ok, ...)
    sethook()
    if aborted then return "error", aborted end
    if not ok then
      local e = ...
      if type(e) == "string" then return "error", e end
      return "error", "the script raised a " .. type(e) .. " value"
    end
    local n = select("#", ...)
    local value = nil
    if n > 0 then value = (select(n, ...)) end
    if value == nil then return "empty" end
    if type(value) ~= "table" then
      return "error", "expect table output from Lua script, not " .. type(value)
    end
    if next(value) == nil then return "empty" end
    local status, message = rawget(value, "status"), rawget(value, "message")
    if status ~= nil and type(status) ~= "string" then
      return "error", "status is a " .. type(status) .. ", not a string"
    end
    if message ~= nil and type(message) ~= "string" then
      return "error", "message is a " .. type(message) .. ", not a string"
    end
    return "ok", status or "", message or ""
  end

  sethook(function()
    count = count + STEP
    if not aborted then
      if count > max_instructions then
        aborted = "instruction limit exceeded (" .. max_instructions .. ")"
      elseif clock() > deadline then
        aborted = "time limit exceeded"
      end
    end
    if aborted then real_error(aborted, 0) end
  end, "", STEP)
  return settle(real_pcall(chunk))
end
"""


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    # Nothing Python is handed to Lua but the clock; even so, refuse every attribute.
    raise AttributeError("attribute access is not allowed")


def evaluate_lua(
    script: str,
    obj: Mapping[str, Any],
    *,
    use_open_libs: bool = False,
    limits: LuaLimits = DEFAULT_LIMITS,
) -> RuleOutcome:
    """Run an Argo CD health script on ``obj``; Argo CD's health word and message, or "rule failed".

    As in Argo CD: the script's last return value must be a table; a ``status`` that is not
    a health word gives Unknown "Lua returned an invalid health status"; a run error gives
    the error (Argo CD shows it with Unknown). Returning nothing or an empty table, which
    Argo CD shows as no health at all, is reported here as a failed rule too: the rule
    said nothing, and a page must not read that as Healthy.
    """
    if not isinstance(script, str) or not script.strip():
        return rule_failed("the health script is empty")
    if len(script) > limits.max_script_chars:
        return rule_failed(f"the health script is longer than {limits.max_script_chars} characters")
    try:
        document = plain_json(obj)
    except NotPlainJSON as exc:
        return rule_failed(f"the object cannot be given to Lua: {exc}")
    try:
        runtime = lua51.LuaRuntime(
            max_memory=limits.max_memory_bytes,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_deny_attributes,
        )
        run = runtime.execute(_HARNESS, time.monotonic)
        lua_obj = runtime.table_from(document, recursive=True)
        deadline = time.monotonic() + limits.timeout_seconds
        result = run(script, lua_obj, use_open_libs, limits.max_instructions, deadline)
    except lua51.LuaMemoryError:
        return rule_failed(f"memory limit exceeded ({limits.max_memory_bytes // (1024 * 1024)} MiB)")
    except (lua51.LuaError, UnicodeDecodeError) as exc:
        return rule_failed(str(exc))
    return _outcome(result, limits)


def _outcome(result: Any, limits: LuaLimits) -> RuleOutcome:
    kind, *rest = result if isinstance(result, tuple) else (result,)
    if kind == "empty":
        return rule_failed("the script returned no health status")
    if kind == "error":
        message = str(rest[0]) if rest else "unknown error"
        if message == "not enough memory":
            message = f"memory limit exceeded ({limits.max_memory_bytes // (1024 * 1024)} MiB)"
        return rule_failed(message)
    status, message = (str(item) for item in rest)
    if status not in HEALTH_WORDS:
        return rule_failed(INVALID_STATUS)
    return RuleOutcome(status, clip(message), False)
