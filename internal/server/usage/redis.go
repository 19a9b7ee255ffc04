package usage

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore keeps each day's records in one Redis hash,
// <prefix>usage:{YYYY-MM-DD}, whose fields are a row's names and a
// count's letter (n requests, i input, c cached input, o output, $
// cost in µ$, k calls), joined by \x1f, added to with HINCRBY, so
// every replica adds to the same totals and they are exact. A flush
// runs one Lua script per day and per chunk of rows, which adds the
// chunk and notes, in a small hash of this writer's own (<day
// key>:w:<writer>, kept two days), the batch and chunk it added last; a
// retried flush whose chunks landed finds them noted and adds them
// again no more, so a flush counts once. Each day's hash expires
// (EXPIREAT) retention days after the day ends, set at every write;
// Prune has nothing left to do.
type RedisStore struct {
	c         redis.UniversalClient
	prefix    string
	retention int
	// writer names this store's flushes apart from other replicas'.
	writer string
}

// NewRedisStore returns a store in c's Redis, its keys starting with
// prefix (fleet.prefix), keeping days for retention days.
func NewRedisStore(c redis.UniversalClient, prefix string, retention int) *RedisStore {
	return &RedisStore{c: c, prefix: prefix, retention: retention, writer: newID()}
}

// Where implements Store.
func (s *RedisStore) Where() string { return "redis" }

// DayKey is the hash that holds day's records.
func (s *RedisStore) DayKey(day string) string { return s.prefix + "usage:{" + day + "}" }

// addScript adds one chunk of a batch: KEYS[1] the day's hash, KEYS[2]
// the writer's note of what it added last; ARGV[1] the hash's expiry
// (Unix seconds), ARGV[2] the batch id, ARGV[3] the chunk's first row,
// then field and increment pairs. A chunk at or before the noted one of
// the same batch has landed already: it adds nothing.
var addScript = redis.NewScript(`
local last = redis.call('HMGET', KEYS[2], 'batch', 'start')
if last[1] == ARGV[2] and tonumber(last[2]) >= tonumber(ARGV[3]) then
  return 0
end
for i = 4, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[2], 'batch', ARGV[2], 'start', ARGV[3])
redis.call('EXPIRE', KEYS[2], 172800)
redis.call('EXPIREAT', KEYS[1], ARGV[1])
return 1
`)

// chunkRows bounds the rows one script adds, so a large batch does not
// hold Redis for long.
const chunkRows = 500

var letters = [6]string{"n", "i", "c", "o", "$", "k"}

func (c Counts) values() [6]int64 {
	return [6]int64{c.Requests, c.Input, c.CachedInput, c.Output, c.Cost, c.Calls}
}

// Add adds recs, in chunks of at most chunkRows rows of one day each.
// REQUIRES: a batch that failed is added again, whole and in the same
// order, before any other (Recorder.Flush does so): only the last batch
// is remembered.
func (s *RedisStore) Add(ctx context.Context, id string, recs []Record) error {
	for start := 0; start < len(recs); {
		day := recs[start].Day
		end := start
		for end < len(recs) && recs[end].Day == day && end-start < chunkRows {
			end++
		}
		t, err := time.Parse(time.DateOnly, day)
		if err != nil {
			return fmt.Errorf("usage: record of day %q: %w", day, err)
		}
		expire := t.AddDate(0, 0, 1+s.retention).Unix()
		args := make([]any, 3, 3+2*len(letters)*(end-start))
		args[0], args[1], args[2] = expire, id, start
		for _, r := range recs[start:end] {
			f := r.Row.field() + sep
			for i, v := range r.Counts.values() {
				if v != 0 {
					args = append(args, f+letters[i], v)
				}
			}
		}
		key := s.DayKey(day)
		if err := addScript.Run(ctx, s.c, []string{key, key + ":w:" + s.writer}, args...).Err(); err != nil && err != redis.Nil {
			return err
		}
		start = end
	}
	return nil
}

// Read implements Store.
func (s *RedisStore) Read(ctx context.Context, day string, fn func(Record) error) error {
	rows := map[Row]*Counts{}
	var cursor uint64
	for {
		kv, next, err := s.c.HScan(ctx, s.DayKey(day), cursor, "*", 1000).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			at := strings.LastIndex(kv[i], sep)
			if at < 0 {
				continue
			}
			row, ok := parseField(kv[i][:at])
			v, err := strconv.ParseInt(kv[i+1], 10, 64)
			if !ok || err != nil {
				continue
			}
			c := rows[row]
			if c == nil {
				c = &Counts{}
				rows[row] = c
			}
			switch kv[i][at+1:] {
			case "n":
				c.Requests = v
			case "i":
				c.Input = v
			case "c":
				c.CachedInput = v
			case "o":
				c.Output = v
			case "$":
				c.Cost = v
			case "k":
				c.Calls = v
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	for row, c := range rows {
		if err := fn(Record{Day: day, Row: row, Counts: *c}); err != nil {
			return err
		}
	}
	return nil
}

// Prune does nothing: Redis expires each day's hash itself.
func (s *RedisStore) Prune(context.Context, string) error { return nil }

var _ Store = (*RedisStore)(nil)
