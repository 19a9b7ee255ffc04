package gateway

import (
	"container/list"
	"encoding/json"
	"sync"
	"time"
)

// The items of bridged answers, kept for item_reference. A Responses API
// client that keeps its conversation as OpenAI stores it (the AI SDK's
// default OpenAI provider, with store left on) sends an earlier answer
// back not as the answer but as {"type":"item_reference","id":...}. The
// answers the bridge wrote are Sluice's own, so Sluice keeps their
// output items (messages and function calls), by id, and a later bridged
// request reads a reference to one as the item itself
// (translate.Options.Items).
//
//   - Bounded: at most itemsMaxBytes of items, the least recently used
//     going first, each for itemsTTL. A reference to an item no longer
//     kept (or kept by another replica of a fleet) is refused with a 400
//     that names input.item_reference and says to send the item itself.
//   - A request with store: false has nothing kept, as OpenAI keeps
//     nothing for it; the client then sends whole items.
//   - Scoped by the caller's key: one client cannot read another's
//     items by guessing their ids.
//   - In memory only: what a client wrote is never written to disk or
//     to the shared store.
const (
	itemsMaxBytes = 64 << 20
	itemsTTL      = time.Hour
)

// itemStore holds items by id, least recently used first out.
type itemStore struct {
	mu    sync.Mutex
	now   func() time.Time
	byID  map[string]*list.Element
	order list.List // of *keptItem; front: most recently used
	bytes int
	max   int // itemsMaxBytes
}

type keptItem struct {
	id      string
	raw     json.RawMessage
	expires time.Time
}

func newItemStore(now func() time.Time) *itemStore {
	return &itemStore{now: now, byID: map[string]*list.Element{}, max: itemsMaxBytes}
}

// get returns the item kept under id for scope.
func (s *itemStore) get(scope, id string) (json.RawMessage, bool) {
	id = scope + "\x00" + id
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	it := e.Value.(*keptItem)
	if s.now().After(it.expires) {
		s.remove(e)
		return nil, false
	}
	s.order.MoveToFront(e)
	return it.raw, true
}

// keep stores, for scope, the output items of a bridged response
// object (a whole answer, or the response its stream's last event
// carries).
func (s *itemStore) keep(scope string, response []byte) {
	var r struct {
		Output []json.RawMessage `json:"output"`
	}
	if json.Unmarshal(response, &r) != nil {
		return
	}
	for _, raw := range r.Output {
		var head struct{ ID, Type string }
		if json.Unmarshal(raw, &head) != nil || head.ID == "" || (head.Type != "message" && head.Type != "function_call") {
			continue
		}
		s.put(scope+"\x00"+head.ID, raw)
	}
}

func (s *itemStore) put(id string, raw json.RawMessage) {
	size := len(id) + len(raw)
	if size > s.max/16 {
		return // one answer must not empty the store
	}
	raw = append(json.RawMessage(nil), raw...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		s.remove(e)
	}
	s.byID[id] = s.order.PushFront(&keptItem{id: id, raw: raw, expires: s.now().Add(itemsTTL)})
	s.bytes += size
	for s.bytes > s.max {
		s.remove(s.order.Back())
	}
}

func (s *itemStore) remove(e *list.Element) {
	it := s.order.Remove(e).(*keptItem)
	delete(s.byID, it.id)
	s.bytes -= len(it.id) + len(it.raw)
}

// responseOf is the response object a Responses API stream's final
// event carries (response.completed, .incomplete), or nil.
func responseOf(name string, data []byte) []byte {
	if name != "response.completed" && name != "response.incomplete" {
		return nil
	}
	var ev struct {
		Response json.RawMessage `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	return ev.Response
}

// itemScope is whose items a request may refer to: its key's, or, on a
// gateway without keys, everyone's.
func itemScope(x *exchange) string {
	if x.key != nil {
		return x.key.name
	}
	return ""
}

// itemsOf resolves the item references of x's request.
func (g *Gateway) itemsOf(x *exchange) func(string) (json.RawMessage, bool) {
	scope := itemScope(x)
	return func(id string) (json.RawMessage, bool) { return g.items.get(scope, id) }
}
