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
//   - Bounded: at most itemsMaxBytes of items, each for itemsTTL; when
//     full, the key holding the most gives up its least recently used
//     item, so one caller's flood evicts its own items, not others'. A reference to an item no longer
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

// itemStore holds items by scope and id. When it is full, the scope
// holding the most bytes loses its least recently used item: a caller
// that floods the store evicts its own items, not another key's.
type itemStore struct {
	mu     sync.Mutex
	now    func() time.Time
	scopes map[string]*itemScopeList
	bytes  int
	max    int // itemsMaxBytes
}

// itemScopeList is one scope's items, most recently used first.
type itemScopeList struct {
	byID  map[string]*list.Element
	order list.List // of *keptItem
	bytes int
}

type keptItem struct {
	id      string
	raw     json.RawMessage
	expires time.Time
}

func newItemStore(now func() time.Time) *itemStore {
	return &itemStore{now: now, scopes: map[string]*itemScopeList{}, max: itemsMaxBytes}
}

// get returns the item kept under id for scope.
func (s *itemStore) get(scope, id string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scopes[scope]
	if sc == nil {
		return nil, false
	}
	e, ok := sc.byID[id]
	if !ok {
		return nil, false
	}
	it := e.Value.(*keptItem)
	if s.now().After(it.expires) {
		s.remove(scope, sc, e)
		return nil, false
	}
	sc.order.MoveToFront(e)
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
		s.put(scope, head.ID, raw)
	}
}

func (s *itemStore) put(scope, id string, raw json.RawMessage) {
	size := len(id) + len(raw)
	if size > s.max/16 {
		return // one answer must not empty the store
	}
	raw = append(json.RawMessage(nil), raw...)
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scopes[scope]
	if sc == nil {
		sc = &itemScopeList{byID: map[string]*list.Element{}}
		s.scopes[scope] = sc
	}
	if e, ok := sc.byID[id]; ok {
		s.remove(scope, sc, e)
	}
	sc.byID[id] = sc.order.PushFront(&keptItem{id: id, raw: raw, expires: s.now().Add(itemsTTL)})
	sc.bytes += size
	s.bytes += size
	for s.bytes > s.max {
		// The largest holder gives up its least recently used item.
		var big *itemScopeList
		bigScope := ""
		for name, c := range s.scopes {
			if big == nil || c.bytes > big.bytes || (c.bytes == big.bytes && name < bigScope) {
				big, bigScope = c, name
			}
		}
		s.remove(bigScope, big, big.order.Back())
	}
}

func (s *itemStore) remove(scope string, sc *itemScopeList, e *list.Element) {
	it := sc.order.Remove(e).(*keptItem)
	delete(sc.byID, it.id)
	size := len(it.id) + len(it.raw)
	sc.bytes -= size
	s.bytes -= size
	if sc.order.Len() == 0 {
		delete(s.scopes, scope)
	}
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
func (s *itemStore) of(x *exchange) func(string) (json.RawMessage, bool) {
	scope := itemScope(x)
	return func(id string) (json.RawMessage, bool) { return s.get(scope, id) }
}
