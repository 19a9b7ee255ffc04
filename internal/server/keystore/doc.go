// Package keystore keeps the virtual keys made at run time, through the
// admin API (POST /admin/keys), as opposed to those in the config file's
// keys:. A record is a config.Key (stored whole, as JSON, so every field
// the config has flows through) plus what only a key made at run time
// has: an expiry, a disabled flag, its creation and update times, a
// revocation mark, and during a rotation the previous secret's SHA-256
// with the end of its grace. The secret itself is never stored.
//
// Two backends:
//
//   - Redis, when the config names a store: one hash (<prefix>keys, a
//     field per key name), a version counter (<prefix>keys:version), and
//     a pub/sub channel (<prefix>chan:keys) that announces each change.
//     Every change is a read-modify-write under WATCH: it applies only
//     if no other change came between its read and its write, and is
//     otherwise tried again on the new state, so a rotation racing a
//     revocation either rotates first (and the revocation then ends both
//     secrets) or finds the key revoked; it never writes a live secret
//     back over a revocation. Each replica reloads the hash when the
//     channel announces a change, and also polls the version every
//     PollEvery (250 ms), so a missed announcement (a dropped
//     connection) still arrives within about a quarter second plus a
//     round trip. Redis unreachable, a replica keeps the last keys it
//     read; changes fail with ErrUnavailable. Every read (and the poll)
//     reads the fleet's epoch too (fleetstore.EpochKey): when it changed
//     or vanished since the last read, or the version went backwards,
//     Redis lost its data, and the replica writes back every record it
//     holds (Loss) before it publishes what Redis holds: those Redis
//     lacks, or holds at a lower version from before the loss, never
//     over one written since (each record carries the version and
//     epoch it was written at), and raises the version past every one
//     it held. Changes wait Settle (a second) after the loss was first
//     seen, so that every live replica has written back first.
//   - A JSON file, state.dir/keys.json, when there is no store: written
//     whole on each change, to a temporary file in the same directory
//     that is synced and then renamed over the old one, so a crash
//     leaves the old file or the new one, never half of either. Changes
//     are serialised by a mutex and applied in memory only once the file
//     is written. Only this process reads it, so a change is seen at
//     once.
//
// Revoked keys stay as tombstones (Record.Revoked), so that the gateway
// can tell a client its key was revoked rather than unknown, and so that
// a store that ever held keys keeps saying so (see the gateway's
// auth.required rule). Creating a key of a revoked key's name replaces
// the tombstone.
package keystore
