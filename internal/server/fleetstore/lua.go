package fleetstore

import "github.com/redis/go-redis/v9"

// The budget scripts share one prelude: exact GCRA arithmetic in Lua
// numbers, which are doubles. Every value the prelude computes with is an
// integer below 2^53, so every sum, difference and product it forms is
// exact; the limits that guarantee this are checked in Go (see
// maxPerMinute, maxBurst, maxCost).
//
// A dimension's backlog (TAT − t, t the latest instant seen) is kept as
// us + f/per microseconds: whole microseconds and a remainder in units of
// 1/per µs, below per. The emission interval is 60e6/per µs, so every
// multiple of it is such a pair with no rounding, and the rate never
// drifts. The hash holds, per limited dimension i (1 to 3), ui and fi and
// the pi that fi is counted in, and t, the latest instant seen, in µs
// since the store's epoch.
//
// ARGV[1] is the instant to use, in µs since the epoch, or "" for Redis's
// own clock (TIME). ARGV[2..7] are per and burst for each dimension (per
// 0: unlimited; burst already defaulted to per). ARGV[8..10] are the
// amounts, one per dimension: the cost for take and check, the signed
// overrun (positive: charge, negative: refund) for settle.
//
// Every script returns {ok, dimension, retry µs, never, then per
// dimension remaining and reset µs}.
const prelude = `
local M = 60000000
local CAP = 4503599627370496
local EPOCH = 1577836800

local function divmod(x, p)
  local q = math.floor(x / p)
  local r = x - q * p
  if r < 0 then
    q = q - 1; r = r + p
  elseif r >= p then
    q = q + 1; r = r - p
  end
  return q, r
end

local FACTORS = {60, 10, 10, 10, 10, 10, 10}

local function units(n, per)
  local q, r = divmod(n, per)
  if q >= CAP / M then return CAP, 0 end
  local acc = 0
  for i = 1, #FACTORS do
    local f = FACTORS[i]
    local d
    d, r = divmod(r * f, per)
    acc = acc * f + d
  end
  local us = q * M + acc
  if us > CAP or (us == CAP and r > 0) then return CAP, 0 end
  return us, r
end

local function less(au, af, bu, bf)
  return au < bu or (au == bu and af < bf)
end

local function add(au, af, bu, bf, per)
  local u, f = au + bu, af + bf
  if f >= per then
    f = f - per; u = u + 1
  end
  if u > CAP or (u == CAP and f > 0) then return CAP, 0 end
  return u, f
end

local function sub(au, af, bu, bf, per)
  if not less(bu, bf, au, af) then return 0, 0 end
  if af < bf then return au - bu - 1, af + per - bf end
  return au - bu, af - bf
end

local function ceil(u, f)
  if f > 0 then return u + 1 end
  return u
end

local function remaining(du, df, per)
  local a, b = divmod(du, M)
  local ph, pl = divmod(per, M)
  local c = divmod(b * pl + df, M)
  return a * per + b * ph + c
end

local key = KEYS[1]
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = (tonumber(t[1]) - EPOCH) * 1000000 + tonumber(t[2])
end

local h = redis.call('HMGET', key, 't', 'u1', 'f1', 'p1', 'u2', 'f2', 'p2', 'u3', 'f3', 'p3')
local last = tonumber(h[1])
local elapsed = 0
if last then
  if now < last then now = last end
  elapsed = now - last
end

local per, burst, amt = {}, {}, {}
local bu, bf, fu, ff = {}, {}, {}, {}
for i = 1, 3 do
  per[i] = tonumber(ARGV[2 * i])
  burst[i] = tonumber(ARGV[2 * i + 1])
  amt[i] = tonumber(ARGV[7 + i])
  bu[i], bf[i] = 0, 0
  if per[i] > 0 then
    local u, f, p = tonumber(h[3 * i - 1]), tonumber(h[3 * i]), tonumber(h[3 * i + 1])
    if u then
      if p ~= per[i] and f > 0 then
        u = u + 1; f = 0
      end
      if elapsed >= u + 1 or (elapsed == u and f == 0) then
        u, f = 0, 0
      elseif elapsed > 0 then
        u = u - elapsed
      end
      bu[i], bf[i] = u, f
    end
    fu[i], ff[i] = units(burst[i], per[i])
  end
end

local function int(x)
  return string.format('%.0f', x)
end

local function save()
  local args = {'t', int(now)}
  local longest = 0
  for i = 1, 3 do
    if per[i] > 0 then
      table.insert(args, 'u' .. i); table.insert(args, int(bu[i]))
      table.insert(args, 'f' .. i); table.insert(args, int(bf[i]))
      table.insert(args, 'p' .. i); table.insert(args, int(per[i]))
      local c = ceil(bu[i], bf[i])
      if c > longest then longest = c end
    end
  end
  redis.call('HSET', key, unpack(args))
  local ms = math.floor(longest / 1000) + 1000
  if ms > 3153600000000 then ms = 3153600000000 end
  redis.call('PEXPIRE', key, int(ms))
end

local function result(ok, dim, wait, never)
  local r = {ok, dim, wait, never}
  for i = 1, 3 do
    local rem, reset = 0, 0
    if per[i] > 0 then
      reset = ceil(bu[i], bf[i])
      local du, df = sub(fu[i], ff[i], bu[i], bf[i], per[i])
      rem = remaining(du, df, per[i])
    end
    table.insert(r, rem); table.insert(r, reset)
  end
  return r
end
`

// takeBody is take and check: commit is set in take's copy.
const takeBody = `
local ok, dim, wait, never = 1, 0, 0, 0
local au, af = {}, {}
for i = 1, 3 do
  if per[i] > 0 then
    if amt[i] > burst[i] then
      if never == 0 then ok, dim, wait, never = 0, i - 1, 0, 1 end
    else
      local nu, nf = units(amt[i], per[i])
      au[i], af[i] = add(bu[i], bf[i], nu, nf, per[i])
      if never == 0 and less(fu[i], ff[i], au[i], af[i]) then
        local w = ceil(sub(au[i], af[i], fu[i], ff[i], per[i]))
        if ok == 1 or w > wait then ok, dim, wait = 0, i - 1, w end
      end
    end
  end
end
if ok == 1 and COMMIT then
  for i = 1, 3 do
    if per[i] > 0 then bu[i], bf[i] = au[i], af[i] end
  end
  save()
end
return result(ok, dim, wait, never)
`

const settleBody = `
local changed = false
for i = 1, 3 do
  if per[i] > 0 and amt[i] ~= 0 then
    local nu, nf = units(math.abs(amt[i]), per[i])
    if amt[i] > 0 then
      bu[i], bf[i] = add(bu[i], bf[i], nu, nf, per[i])
    else
      bu[i], bf[i] = sub(bu[i], bf[i], nu, nf, per[i])
    end
    changed = true
  end
end
if changed then save() end
return result(1, 0, 0, 0)
`

const statusBody = `
return result(1, 0, 0, 0)
`

// leaseScript acquires or renews KEYS[1] for holder ARGV[1] for ARGV[2]
// ms: 1 if the caller holds it now, 0 if someone else does.
const leaseSrc = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if v then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return 1
`

// releaseScript deletes KEYS[1] if holder ARGV[1] holds it.
const releaseSrc = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`

var (
	takeScript    = redis.NewScript("local COMMIT = true\n" + prelude + takeBody)
	checkScript   = redis.NewScript("local COMMIT = false\n" + prelude + takeBody)
	settleScript  = redis.NewScript(prelude + settleBody)
	statusScript  = redis.NewScript(prelude + statusBody)
	leaseScript   = redis.NewScript(leaseSrc)
	releaseScript = redis.NewScript(releaseSrc)
)
