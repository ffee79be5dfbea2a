"""The frontier's operations in Redis, each one Lua script, so that no count can drift.

Keys, under the prefix `crawlscope:<crawl id>:`:

    seen        SET    every URL the crawl has seen (the chapter's seen_urls)
    q:<host>    LIST   that host's queue of members, oldest first
    ready       ZSET   hosts with queued work and a free slot, by the time (ms) each may
                       next be fetched: a busy or slow host never blocks another's URLs
    next        HASH   host -> the earliest time (ms) of its next fetch (--delay, Crawl-delay)
    delay       HASH   host -> the Crawl-delay (ms) its robots.txt asks for
    busy        HASH   host -> leases in flight on it (--per-host, across the cluster)
    inflight    ZSET   leased members, by the time (ms) their lease expires
    n           HASH   unfinished (= queued + in flight: what join() waits on), queued,
                       done, failed, filtered; bad (entries set aside); ended (ms, when
                       unfinished last reached 0); admitted (places --max-pages gave out)
                       and unfetched (URLs waiting in `over`)
    over        LIST   members --max-pages left unfetched, oldest first: the first takes
                       the place of an admitted URL that was filtered after all (robots.txt)
    bad         LIST   what was found in these keys that no process of crawlscope wrote (a
                       member that is not JSON, a lease with no host, ...), one line each,
                       set aside so that it cannot stop the crawl; bad:<n> a queue key of
                       the wrong type, renamed
    wanters     ZSET   processes that wanted more leases than they got, by when they last
                       asked; holding HASH: process -> leases it holds (the fair take)

A member is "<host> <json [url, max_redirect, depth, referrer]>": a URL is queued once
(the seen set), so its member names its lease too. Time is Redis's own (TIME), so the
clocks of the machines never matter. Only commands Redis 6.2 has.
"""

from __future__ import annotations

# A process that wanted leases and has not asked again for this long waits for nothing.
FRESH_MS = 1000
# How long a process that let another take its turn waits before it asks again.
YIELD_MS = 20

# The longest lease a process may take (--lease), in ms: one that expires later than this
# from now was not written by crawlscope.
MAX_LEASE_MS = 86_400_000

# Shared by every script: ARGV[1] is the key prefix.
PRELUDE = f"""
local P = ARGV[1]
local FRESH_MS, YIELD_MS, MAX_LEASE_MS = {FRESH_MS}, {YIELD_MS}, {MAX_LEASE_MS}
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function host_of(member)
  return string.match(member, '^(%S+) ')
end
local function num(value)
  return (value and tonumber(value)) or 0
end
-- The counts in `n` a script moves, written once at its end (write_counts): moved one
-- HINCRBY at a time they were 8 of a page's 36 commands in Redis.
local moved = {{}}
local function count(field, by)
  moved[field] = (moved[field] or 0) + by
end
local function write_counts()
  for field, by in pairs(moved) do
    if by ~= 0 then
      redis.call('HINCRBY', P .. 'n', field, by)
    end
  end
  moved = {{}}
end
local function whole(value)
  return type(value) == 'number' and value >= 0 and value < 2147483648
    and value == math.floor(value)
end
-- Its host and URL if a member is one crawlscope wrote (for that host's queue), else nil:
-- anyone who reaches Redis can write these keys, and one bad entry must not stop a crawl.
local function parse(member, queue_host)
  local host, body = string.match(member, '^(%S+) (.+)$')
  if not host or (queue_host and host ~= queue_host) then
    return nil
  end
  local ok, t = pcall(cjson.decode, body)
  if not ok or type(t) ~= 'table' or #t ~= 4 or type(t[1]) ~= 'string'
      or not whole(t[2]) or not whole(t[3])
      or (t[4] ~= cjson.null and type(t[4]) ~= 'string') then
    return nil
  end
  return host, t[1]
end
local function set_aside(why, raw)
  redis.call('RPUSH', P .. 'bad', why .. ': ' .. raw)
  redis.call('HINCRBY', P .. 'n', 'bad', 1)
end
-- A host's queue key; if it held something other than a list, that is renamed out of
-- the way first (to bad:<n>), and the queue starts again empty. Looked at once a script
-- call: nothing else runs while a script does, and this one only keeps lists there (a
-- page's TYPE checks were 5 of its 36 commands in Redis).
local lists = {{}}
local function queue_of(host)
  local key = P .. 'q:' .. host
  if lists[key] then
    return key
  end
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'list' and kind ~= 'none' then
    local n = redis.call('HINCRBY', P .. 'n', 'bad', 1)
    redis.call('RENAME', key, P .. 'bad:' .. n)
    redis.call('RPUSH', P .. 'bad', 'a ' .. kind .. ', not a list, renamed to bad:' .. n
      .. ': ' .. key)
  end
  lists[key] = true
  return key
end
-- A host is in `ready` exactly when it has queued work and a free slot.
local function wake(host, limit)
  if redis.call('LLEN', queue_of(host)) == 0
      or (limit > 0 and num(redis.call('HGET', P .. 'busy', host)) >= limit) then
    redis.call('ZREM', P .. 'ready', host)
  else
    redis.call('ZADD', P .. 'ready', 'NX', num(redis.call('HGET', P .. 'next', host)), host)
  end
end
-- Hosts a script added to or freed a slot of, woken once each at its end (wake_all)
-- rather than at every URL: nothing that script reads of `ready` comes in between.
local to_wake = {{}}
local function wake_later(host)
  to_wake[host] = true
end
local function wake_all(limit)
  for host in pairs(to_wake) do
    wake(host, limit)
  end
  to_wake = {{}}
end
-- `command` on `key` with `args` in slices (Lua unpacks some 8,000 values at most, and a
-- round of many workers can end more leases than that): the replies, one a slice.
local SLICE = 1000  -- even: (score, member) pairs stay whole
local function sliced(command, key, args)
  local replies = {{}}
  for first = 1, #args, SLICE do
    replies[#replies + 1] = redis.call(command, key,
      unpack(args, first, math.min(first + SLICE - 1, #args)))
  end
  return replies
end
-- The lease leaves the in-flight set; its host, or nil if it was not there (expired
-- and reclaimed, or ended already): then nothing may be counted twice.
local function release(member)
  if redis.call('ZREM', P .. 'inflight', member) == 0 then
    return nil
  end
  local host = host_of(member)
  redis.call('HINCRBY', P .. 'busy', host, -1)
  return host
end
local function requeue(member, host, limit)
  redis.call('LPUSH', queue_of(host), member)
  count('queued', 1)
  wake(host, limit)
end
"""

# ARGV: prefix, per-host limit, --max-pages (0: none), count of pairs, then (url, member)
# pairs, then URLs the rules filtered. A URL already seen does nothing: adding the roots
# again is harmless. --max-pages is the whole crawl's: a new URL past it waits in `over`,
# counted unfetched, whichever process found it.
ADD = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
local pairs_n = tonumber(ARGV[4])
local added = 0
-- Every count there from the start: a missing one would read as 0 and prove nothing.
-- (Looked at in one command, written only if missing: six commands at every call were
-- some third of what this script ran.)
local fields = {'unfinished', 'queued', 'done', 'failed', 'filtered', 'unfetched'}
local there = redis.call('HMGET', P .. 'n', unpack(fields))
for i, field in ipairs(fields) do
  if not there[i] then
    redis.call('HSETNX', P .. 'n', field, 0)
  end
end
for i = 0, pairs_n - 1 do
  local url, member = ARGV[5 + 2 * i], ARGV[6 + 2 * i]
  if redis.call('SADD', P .. 'seen', url) == 1 then
    local host = host_of(member)
    local queue = queue_of(host)
    if budget > 0
        and num(redis.call('HGET', P .. 'n', 'admitted')) + (moved['admitted'] or 0) >= budget then
      redis.call('RPUSH', P .. 'over', member)
      count('unfetched', 1)
    else
      count('admitted', 1)
      redis.call('RPUSH', queue, member)
      count('queued', 1)
      count('unfinished', 1)
      wake_later(host)
      added = added + 1
    end
  end
end
if added > 0 then
  redis.call('HDEL', P .. 'n', 'ended')
end
for i = 5 + 2 * pairs_n, #ARGV do
  if redis.call('SADD', P .. 'seen', ARGV[i]) == 1 then
    count('filtered', 1)
  end
end
wake_all(limit)
write_counts()
return added
"""
)

# ARGV: prefix, per-host limit, members. A worker cancelled before its record was
# written: the member goes back to the front of its queue; unfinished does not move.
BACK = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local back = 0
for i = 3, #ARGV do
  local host = release(ARGV[i])
  if host then
    requeue(ARGV[i], host, limit)
    back = back + 1
  end
end
write_counts()
return back
"""
)

# ARGV: prefix, per-host limit, --max-pages (0: none), count of leases, then (member,
# outcome) pairs, then (host, Crawl-delay ms) pairs learned from robots.txt. task_done:
# idempotent, because only a lease still in flight is counted. A URL filtered after it
# was admitted (robots.txt) fetched nothing: its place goes to the first URL waiting.
DONE = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
local leases = tonumber(ARGV[4])
local ended = 0
-- Which leases are still in flight, asked in one command and let go of in one (a
-- lease was two commands, and a round ends several).
local members, hosts_freed = {}, {}
for i = 0, leases - 1 do
  members[i + 1] = ARGV[5 + 2 * i]
end
local scores = {}
for _, slice in ipairs(sliced('ZMSCORE', P .. 'inflight', members)) do
  for _, score in ipairs(slice) do
    scores[#scores + 1] = score
  end
end
local gone, once = {}, {}
for i = 0, leases - 1 do
  local member, outcome = members[i + 1], ARGV[6 + 2 * i]
  local host = host_of(member)
  -- Not in flight (expired and reclaimed, or ended already), or named twice here:
  -- nothing may be counted twice.
  if scores[i + 1] and host and not once[member] then
    once[member] = true
    gone[#gone + 1] = member
    hosts_freed[host] = (hosts_freed[host] or 0) + 1
    count('unfinished', -1)
    count(outcome, 1)
    wake_later(host)
    ended = ended + 1
    if budget > 0 and outcome == 'filtered' then
      local waiting = redis.call('LPOP', P .. 'over')
      if waiting then
        local next_host = host_of(waiting)
        count('unfetched', -1)
        count('unfinished', 1)
        if next_host then
          redis.call('RPUSH', queue_of(next_host), waiting)
          count('queued', 1)
          wake_later(next_host)
        end
      else
        count('admitted', -1)
      end
    end
  end
end
sliced('ZREM', P .. 'inflight', gone)
for host, freed in pairs(hosts_freed) do
  redis.call('HINCRBY', P .. 'busy', host, -freed)
end
wake_all(limit)
write_counts()
if ended > 0 and num(redis.call('HGET', P .. 'n', 'unfinished')) <= 0 then
  redis.call('HSET', P .. 'n', 'ended', now_ms())
end
for i = 5 + 2 * leases, #ARGV, 2 do
  redis.call('HSET', P .. 'delay', ARGV[i], ARGV[i + 1])
end
return ended
"""
)

# ARGV: prefix, lease ms, members: each lease still held runs lease ms from now.
RENEW = (
    PRELUDE
    + """
local expiry = now_ms() + tonumber(ARGV[2])
local renewed = 0
for i = 3, #ARGV do
  renewed = renewed + redis.call('ZADD', P .. 'inflight', 'XX', 'CH', expiry, ARGV[i])
end
return renewed
"""
)

# ARGV: prefix, per-host limit. Expired leases (their process died, or lost Redis for
# longer than a lease) go back to the front of their queues; what no process of
# crawlscope wrote is set aside.
RECLAIM = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local now = now_ms()
local expired = redis.call('ZRANGEBYSCORE', P .. 'inflight', '-inf', now, 'LIMIT', 0, 1000)
-- A lease no process could have written (no --lease is that long) is looked at now too.
local far = redis.call('ZRANGEBYSCORE', P .. 'inflight', now + MAX_LEASE_MS, '+inf',
                       'LIMIT', 0, 100)
for _, member in ipairs(far) do
  expired[#expired + 1] = member
end
for _, member in ipairs(expired) do
  local host, url = parse(member, nil)
  if not host then
    redis.call('ZREM', P .. 'inflight', member)
    set_aside('a lease crawlscope did not write', member)
  else
    redis.call('ZREM', P .. 'inflight', member)
    if num(redis.call('HGET', P .. 'busy', host)) > 0 then
      redis.call('HINCRBY', P .. 'busy', host, -1)
    end
    if redis.call('SADD', P .. 'seen', url) == 1 then
      count('unfinished', 1)  -- written by hand: counted now
    end
    requeue(member, host, limit)
  end
end
write_counts()
return #expired
"""
)

# ARGV: prefix, per-host limit, leases wanted, lease ms, --delay ms, this process's name,
# leases it holds. Takes from the hosts whose time has come, oldest first, and sets each
# one's next time in the same step (no other process can slip a fetch in between); a host
# alone ready with no delay gives all it may at once, in a few commands.
#
# Fair between processes: one that holds two leases more than another that is waiting
# for work takes none, so a slot it just freed goes to the other (else the process that
# was first keeps every per-host slot, freeing and taking it again in one round trip).
# One lease more is let be: a gap of one comes and goes as leases end, and yielding for
# it would leave the slot idle until the other process next asks.
#
# A member found in a queue that is not one crawlscope wrote is set aside (`bad`); one
# well formed but never added (its URL not in `seen`) is counted now and taken, and the
# process checks it as it checks a link it found.
#
# Returns the members taken, then the crawl's figures: unfinished, queued, done, failed,
# filtered, in flight, seen, ms until the next host is ready (-1: none is queued),
# entries set aside so far, and URLs --max-pages left unfetched.
TAKE = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
local base_gap = tonumber(ARGV[5])
local me, held = ARGV[6], tonumber(ARGV[7])
local now = now_ms()
-- A process that has not asked for a second is gone, or busy: it waits for nothing.
redis.call('ZREMRANGEBYSCORE', P .. 'wanters', '-inf', now - FRESH_MS)
local least = nil
for _, other in ipairs(redis.call('ZRANGE', P .. 'wanters', 0, -1)) do
  if other ~= me then
    local h = num(redis.call('HGET', P .. 'holding', other))
    if least == nil or h < least then
      least = h
    end
  end
end
local taken = {}
local yielded = false
local looks = 0  -- a queue full of bad entries is worked through a round at a time
while #taken < want and looks < want + 1000 do
  looks = looks + 1
  -- Two: whether the first is the only host ready now.
  local hosts = redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, 2)
  if #hosts == 0 then
    break
  end
  if least ~= nil and held + #taken > least + 1 then
    yielded = true
    break
  end
  local host = hosts[1]
  local gap = math.max(base_gap, num(redis.call('HGET', P .. 'delay', host)))
  -- A host alone ready, with no time to keep between its fetches, gives every lease it
  -- can in one go (each command a script calls costs Redis some microseconds, and a
  -- lease here was a dozen of them); else one, and the hosts take turns.
  local n = 1
  if #hosts == 1 and gap == 0 then
    n = want - #taken
    if limit > 0 then
      n = math.min(n, limit - num(redis.call('HGET', P .. 'busy', host)))
    end
    if least ~= nil then
      n = math.min(n, least + 2 - held - #taken)
    end
    n = math.max(n, 1)
  end
  local popped = redis.call('LPOP', queue_of(host), n) or {}
  local urls, leases, good = {}, {}, 0
  for _, member in ipairs(popped) do
    local _, url = parse(member, host)
    if not url then
      set_aside('not a queue entry crawlscope wrote', member)
    else
      good = good + 1
      urls[good] = url
      leases[2 * good - 1] = now + lease_ms
      leases[2 * good] = member
      taken[#taken + 1] = member
    end
  end
  if good > 0 then
    -- One not in `seen` was written by hand: counted now.
    local new = 0
    for _, added in ipairs(sliced('SADD', P .. 'seen', urls)) do
      new = new + added
    end
    count('unfinished', new)
    count('queued', new - good)
    sliced('ZADD', P .. 'inflight', leases)
    redis.call('HINCRBY', P .. 'busy', host, good)
    redis.call('HSET', P .. 'next', host, now + gap)
    -- to the back of the hosts ready now, or out until its delay has passed
    redis.call('ZADD', P .. 'ready', 'XX', now + gap, host)
  end
  wake(host, limit)
end
if #taken < want then
  redis.call('ZADD', P .. 'wanters', now, me)
else
  redis.call('ZREM', P .. 'wanters', me)
end
if held + #taken > 0 then
  redis.call('HSET', P .. 'holding', me, held + #taken)
else
  redis.call('HDEL', P .. 'holding', me)
end
write_counts()
local n = redis.call('HMGET', P .. 'n', 'unfinished', 'queued', 'done', 'failed', 'filtered',
                     'bad', 'unfetched')
local first = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
local wait = -1
if #first > 0 then
  wait = math.max(0, tonumber(first[2]) - now)
  if yielded then
    wait = math.max(wait, YIELD_MS)  -- the other process's turn: no need to ask at once
  end
end
return {taken, num(n[1]), num(n[2]), num(n[3]), num(n[4]), num(n[5]),
        redis.call('ZCARD', P .. 'inflight'), redis.call('SCARD', P .. 'seen'), wait, num(n[6]),
        num(n[7])}
"""
)
