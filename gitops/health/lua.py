"""Argo CD's Lua health checks, run the way its controller runs them, inside a sandbox.

Argo CD (``util/lua/lua.go``) runs a health script in gopher-lua: the object is the global
``obj``, the script returns a table ``{status = …, message = …}``, and the status must be
one of Argo CD's health words. By default the VM opens only the base, table and package
libraries plus a "safe" ``os`` holding ``time`` and ``date`` (``require("os")`` gives the
same); ``resource.customizations.useOpenLibs.<group_kind>`` opens the standard libraries
for one kind, and every built-in script runs with them. A run is cut off after one second.

Why Lua 5.2 (lupa's ``lua52``): gopher-lua is Lua 5.1 plus ``goto``/labels, and Argo CD's
own scripts use ``goto continue`` (the 3scale and Gateway API checks), which Lua 5.1
rejects. Lua 5.2 has ``goto`` natively and keeps 5.1's numbers: every number is a double
printed as ``%.14g``, so ``tostring(4/2)`` is ``"2"`` as in gopher-lua, where Lua 5.3/5.4
would say ``"2.0"`` and accept ``//`` and bit operators gopher-lua refuses. LuaJIT also
has ``goto``, but lupa cannot cap its memory and its compiled traces skip the count hook
the instruction limit relies on. What 5.2 dropped, the sandbox puts back the way gopher-lua
has it: global ``unpack`` and ``loadstring``, ``table.getn``/``maxn``, ``math.log10``, and
``_VERSION`` says "Lua 5.1". Each chunk gets the sandbox as its ``_ENV`` through
``load(text, name, "t", env)``, which also refuses bytecode (5.2 has no ``setfenv``).

The script runs in a runtime created for this one evaluation and thrown away after it,
with a per-run environment table that is the script's only view of the world:

- base functions without file or raw-environment access (no ``dofile``, ``loadfile``,
  ``getfenv``/``setfenv``, ``collectgarbage``, ``module``, ``newproxy``); ``loadstring``
  and ``load`` compile source only into the same sandbox; ``print`` is silent;
  ``pcall``/``xpcall`` cannot swallow the limits below; ``setmetatable`` refuses a
  ``__gc`` finalizer (gopher-lua has none, and in 5.2 one would run when the runtime is
  closed, after the limits are off);
- ``table``, and ``os`` with only ``time`` and ``date``; ``require`` knows only ``"os"``;
- with ``use_open_libs``: ``string`` and ``math``. Unlike Argo CD, never ``io``, the full
  ``os``, ``debug``, ``package`` or ``coroutine`` (a coroutine would run outside the
  instruction count): the portal is not the place to grant a script a shell.

Limits: an instruction budget enforced by a count hook, a wall-clock deadline checked by
the same hook (Argo CD's one second), lupa's ``max_memory`` for everything the script
allocates, and a cap on the script's size. One C call is invisible to the hook, so the
pattern functions (``find``, ``match``, ``gmatch``, ``gsub``) first bound the steps Lua's
backtracking matcher can take on this subject: per start position, a quantified item
tries at most one more length than the longest run of characters its class matches in
the subject, ``?`` two, ``%b`` and back-references scan at most the subject, and each try
walks at most every item. That bound (``(%d+)-(%d+)-(%d+)T…`` on a timestamp: runs of 4
digits, under 10⁷ steps, well under a millisecond) is what a call may cost; above
``MAX_PATTERN_STEPS`` (about ten milliseconds of C) the call is refused, and after each
call the deadline is checked again, so the time patterns really take counts against the
run. ``rep`` of an empty string returns at once.
Whatever the script does, `evaluate_lua` returns a `RuleOutcome`; a broken or hostile
script gives "rule failed: …".
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import lupa.lua52 as lua52

from gitops.health.sandbox import NotPlainJSON, RuleOutcome, clip, plain_json, rule_failed
from gitops.rows import DEGRADED, HEALTHY, MISSING, PROGRESSING, SUSPENDED, UNKNOWN

# Argo CD's isValidHealthStatusCode.
HEALTH_WORDS = frozenset({HEALTHY, PROGRESSING, DEGRADED, SUSPENDED, MISSING, UNKNOWN})
# Argo CD's own words for a table whose status is not one of them.
INVALID_STATUS = "Lua returned an invalid health status"
# The most matcher steps one pattern call may take. The bound overstates real work about
# tenfold: at this cap ("a*a*a*b" on 65 a's) a call takes about 10 ms of C, unseen by the hook.
MAX_PATTERN_STEPS = 100_000_000


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
local clock, max_pattern_steps = ...
local sethook = debug.sethook
local real_pcall, real_error, real_setmetatable = pcall, error, setmetatable
local load, select, type, rawget, next, pairs = load, select, type, rawget, next, pairs
local tostring, concat = tostring, table.concat
local str_find, str_match, str_gmatch, str_gsub, str_sub, str_rep =
      string.find, string.match, string.gmatch, string.gsub, string.sub, string.rep
local math_log = math.log
local STEP = 1000

local function copy(source, names)
  local out = {}
  for _, name in ipairs(names) do out[name] = source[name] end
  return out
end

-- Where the single-character class starting at index i of the pattern ends (the index
-- after it), as lstrlib.c's classEnd reads it; nil for a malformed class.
local function class_end(pattern, i)
  local c = str_sub(pattern, i, i)
  if c == "%" then return i + 2 end
  if c ~= "[" then return i + 1 end
  local j = i + 1
  if str_sub(pattern, j, j) == "^" then j = j + 1 end
  repeat
    if j > #pattern then return nil end
    local d = str_sub(pattern, j, j)
    j = j + 1
    if d == "%" then j = j + 1 end
  until str_sub(pattern, j, j) == "]"
  return j + 1
end

-- The longest run of subject characters the class item matches: how many lengths a
-- quantifier on it can try at one position. One linear pass in C.
local function longest_run(subject, item)
  if #item == 1 and not str_find(item, "^[%w.]") then item = "%" .. item end
  local best = 0
  for run in str_gmatch(subject, item .. "+") do
    if #run > best then best = #run end
  end
  return best
end

-- An upper bound on the steps Lua's backtracking matcher takes for this subject and
-- pattern over every start position: the product of the lengths each item can try, times
-- the items one attempt walks; nil when the pattern is malformed (the real call then
-- raises the matcher's own error). Each class scan is linear C: the clock is checked
-- after each, so a pattern of thousands of items cannot outrun the deadline here either.
local function pattern_steps(subject, pattern, check_clock)
  local n = #subject
  local steps, items = n + 1, 1
  local i = 1
  while i <= #pattern do
    local c, d = str_sub(pattern, i, i), str_sub(pattern, i + 1, i + 1)
    items = items + 1
    if c == "(" or c == ")" then
      i = i + 1
    elseif c == "%" and d == "b" then
      steps = steps * (n + 1); i = i + 4
    elseif c == "%" and d == "f" then
      i = class_end(pattern, i + 2)
      if not i then return nil end
    elseif c == "%" and str_find(d, "^%d") then
      steps = steps * (n + 1); i = i + 2
    else
      local e = class_end(pattern, i)
      if not e then return nil end
      local q = str_sub(pattern, e, e)
      if q == "*" or q == "+" or q == "-" then
        steps = steps * (longest_run(subject, str_sub(pattern, i, e - 1)) + 1); i = e + 1
        check_clock()
      elseif q == "?" then
        steps = steps * 2; i = e + 1
      else
        i = e
      end
    end
    if steps * items > max_pattern_steps then return steps * items end
  end
  return steps * items
end

local function guarded_string(check_clock)
  local function check(subject, pattern, plain)
    if type(subject) == "number" then subject = tostring(subject) end
    if type(pattern) == "number" then pattern = tostring(pattern) end
    if plain or type(subject) ~= "string" or type(pattern) ~= "string" then return end
    local steps = pattern_steps(subject, pattern, check_clock)
    if steps and steps > max_pattern_steps then
      real_error("pattern too costly for a subject of " .. #subject .. " bytes", 3)
    end
  end
  local function timed(...)
    check_clock()
    return ...
  end
  local s = copy(string, {"byte", "char", "format", "len", "lower", "reverse", "sub", "upper"})
  -- rep of a non-empty string meets the memory limit; of "" it would spin in C for n steps.
  s.rep = function(subject, n)
    if subject == "" then return "" end
    return str_rep(subject, n)
  end
  s.find = function(subject, pattern, init, plain)
    check(subject, pattern, plain); return timed(str_find(subject, pattern, init, plain))
  end
  s.match = function(subject, pattern, init)
    check(subject, pattern); return timed(str_match(subject, pattern, init))
  end
  s.gmatch = function(subject, pattern)
    check(subject, pattern); return str_gmatch(subject, pattern)
  end
  s.gsub = function(subject, pattern, repl, n)
    check(subject, pattern); return timed(str_gsub(subject, pattern, repl, n))
  end
  return s
end

local math_names = {"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg",
  "exp", "floor", "fmod", "frexp", "huge", "ldexp", "log", "max", "min", "modf",
  "pi", "pow", "rad", "random", "randomseed", "sin", "sinh", "sqrt", "tan", "tanh"}
local base_names = {"assert", "error", "ipairs", "next", "pairs", "rawequal", "rawget",
  "rawset", "select", "getmetatable", "tonumber", "tostring", "type"}
local safe_os = {time = os.time, date = os.date}
local string_meta = getmetatable("")

local function sandbox_table()
  local t = copy(table, {"concat", "insert", "remove", "sort"})
  t.getn = function(list) return #list end
  t.maxn = function(list)
    local most = 0
    for key in pairs(list) do
      if type(key) == "number" and key > most then most = key end
    end
    return most
  end
  return t
end

local function sandbox_math()
  local m = copy(math, math_names)
  m.log10 = function(x) return math_log(x, 10) end
  return m
end

return function(source, obj, open_libs, max_instructions, deadline)
  local aborted = nil
  local count = 0
  local env = copy(_G, base_names)
  env._G = env
  env._VERSION = "Lua 5.1"
  env.unpack = table.unpack
  env.print = function() end
  env.table = sandbox_table()
  env.os = copy(safe_os, {"time", "date"})
  env.require = function(name)
    if name == "os" then return env.os end
    real_error("module '" .. tostring(name) .. "' not found", 2)
  end
  env.setmetatable = function(t, mt)
    if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
      real_error("__gc metamethods are not allowed", 2)
    end
    return real_setmetatable(t, mt)
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
    return load(text, name or text, "t", env)
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
    return compile(concat(parts), name or "=(load)")
  end
  local function check_clock()
    if not aborted and clock() > deadline then aborted = "time limit exceeded" end
    if aborted then real_error(aborted, 0) end
  end
  local strings = {}
  if open_libs then
    strings = guarded_string(check_clock)
    env.string = strings
    env.math = sandbox_math()
  end
  -- Methods on strings ("x"):upper() go through this metatable: give them the same view.
  string_meta.__index = strings
  string_meta.__metatable = false
  env.obj = obj

  local chunk, err = load(source, "=health.lua", "t", env)
  if not chunk then return "error", err end

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
    if not aborted and count > max_instructions then
      aborted = "instruction limit exceeded (" .. max_instructions .. ")"
    end
    check_clock()
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
        runtime = lua52.LuaRuntime(
            max_memory=limits.max_memory_bytes,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_deny_attributes,
        )
        run = runtime.execute(_HARNESS, time.monotonic, MAX_PATTERN_STEPS)
        lua_obj = runtime.table_from(document, recursive=True)
        deadline = time.monotonic() + limits.timeout_seconds
        result = run(script, lua_obj, use_open_libs, limits.max_instructions, deadline)
    except lua52.LuaMemoryError:
        return rule_failed(f"memory limit exceeded ({limits.max_memory_bytes // (1024 * 1024)} MiB)")
    except (lua52.LuaError, UnicodeDecodeError) as exc:
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
