package fleetstore

import (
	"crypto/rand"
	"encoding/hex"
)

// The fleet's epoch: a random name the fleet keeps in Redis, in the hash
// <prefix>epoch {id, born, lost}, made afresh by whichever call finds it
// missing. It never changes otherwise, so a replica that read one name
// and later reads another (or finds none) knows that Redis lost its
// data since (restarted without persistence, failed over to a replica
// that had not caught up, or the keys deleted): what Redis holds then is
// not what the fleet wrote, and each replica writes back what it still
// holds (run-time keys, spend) before it acts on what Redis says.
//
// Every part of a replica that keeps state in Redis reads the epoch
// with the state it reads, in the same script, and compares it with the
// one it knew: the heartbeat (Members, which says so: a log line, a
// metric, /readyz), the run-time keys (keystore) and spend (spendstore).
// The first call that knew another epoch marks the new one lost, with
// Redis's time then: the parts that must wait for the fleet to write
// back what it knew (spend's reservations, key changes) wait from that
// instant.

// EpochKey is the fleet's epoch hash under prefix.
func EpochKey(prefix string) string { return prefix + "epoch" }

// EpochLua defines the Lua function fleetEpoch(key, new, known): it
// reads the epoch at key, making it new (born now) when missing, and,
// when the caller knew another (known is neither "" nor the id), marks
// it lost now unless it already was. It returns the id, when it was
// marked lost (ms on Redis's clock; 0: never) and now (ms). A script
// that calls it declares key among its KEYS.
const EpochLua = `
local function fleetEpoch(key, new, known)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local e = redis.call('HMGET', key, 'id', 'lost')
  local id, lost = e[1], tonumber(e[2] or '0') or 0
  if not id then
    id = new; lost = 0
    redis.call('HSET', key, 'id', id, 'born', now)
  end
  if known ~= '' and known ~= id and lost == 0 then
    lost = now
    redis.call('HSET', key, 'lost', now)
  end
  return id, lost, now
end
`

// epochScript runs fleetEpoch alone: KEYS[1] the epoch, ARGV[1] a new
// name, ARGV[2] the one the caller knew. Returns {id, lost, now}.
const epochScript = EpochLua + `
local id, lost, now = fleetEpoch(KEYS[1], ARGV[1], ARGV[2])
return {id, lost, now}
`

// NewEpochName is a fresh random name for an epoch a call may start.
func NewEpochName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// EpochLost reports whether reading epoch id after knowing known means
// Redis lost its data: known is a name read before ("" for none: a
// replica that never read one cannot tell) and id differs from it.
func EpochLost(known, id string) bool { return known != "" && id != known }
