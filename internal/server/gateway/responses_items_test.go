package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The kept items are scoped by key, expire, and stay within their bound,
// the least recently used going first.
func TestItemStore(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newItemStore(func() time.Time { return now })
	s.keep("alice", []byte(`{"id":"resp_1","output":[{"id":"msg_1","type":"message","role":"assistant","content":[]},{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"id":"rs_1","type":"reasoning"}]}`))
	if _, ok := s.get("alice", "msg_1"); !ok {
		t.Error("alice's message is not kept")
	}
	if raw, ok := s.get("alice", "fc_1"); !ok || !strings.Contains(string(raw), `"call_id":"c"`) {
		t.Errorf("alice's call: %s %v", raw, ok)
	}
	if _, ok := s.get("alice", "rs_1"); ok {
		t.Error("a reasoning item was kept; the bridge writes none, and a chat request cannot take one")
	}
	if _, ok := s.get("bob", "msg_1"); ok {
		t.Error("bob read alice's item")
	}
	now = now.Add(itemsTTL + time.Second)
	if _, ok := s.get("alice", "msg_1"); ok {
		t.Error("an item outlived its time")
	}

	s.max = 64 << 10 // the bound's rule, at a size the race detector reads quickly
	big := strings.Repeat("x", s.max/32)
	for i := range 40 {
		s.keep("alice", fmt.Appendf(nil, `{"output":[{"id":"m%d","type":"message","content":"%s"}]}`, i, big))
		if i == 5 {
			s.get("alice", "m0") // used: kept longer than m1
		}
	}
	if s.bytes > s.max {
		t.Errorf("%d bytes kept, bound %d", s.bytes, s.max)
	}
	if _, ok := s.get("alice", "m39"); !ok {
		t.Error("the newest item went")
	}
	if _, ok := s.get("alice", "m1"); ok {
		t.Error("the oldest unused item stayed")
	}
}

// A key that floods the store evicts its own items, not another key's.
func TestItemStoreFloodEvictsTheFlooder(t *testing.T) {
	s := newItemStore(time.Now)
	s.max = 64 << 10
	s.keep("alice", []byte(`{"output":[{"id":"msg_a","type":"message","content":"hello"}]}`))
	big := strings.Repeat("x", s.max/32)
	for i := range 200 {
		s.keep("mallory", fmt.Appendf(nil, `{"output":[{"id":"m%d","type":"message","content":"%s"}]}`, i, big))
	}
	if _, ok := s.get("alice", "msg_a"); !ok {
		t.Error("another key's flood evicted alice's item")
	}
	if s.bytes > s.max {
		t.Errorf("%d bytes kept, bound %d", s.bytes, s.max)
	}
	if _, ok := s.get("mallory", "m199"); !ok {
		t.Error("the flooder's newest item went")
	}
}
