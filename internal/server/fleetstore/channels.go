package fleetstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Channels carries verdicts (a breaker opening, a provider paused)
// between replicas over Redis pub/sub. Delivery is at most once: a
// replica disconnected when a message is published misses it, so a
// message should be a state, not a change (the next one corrects a
// missed one).
type Channels struct {
	rdb redis.UniversalClient
	o   Options
}

// NewChannels returns channels through rdb.
func NewChannels(rdb redis.UniversalClient, o Options) *Channels {
	return &Channels{rdb: rdb, o: o.withDefaults()}
}

// Name is channel's name in Redis.
func (c *Channels) Name(channel string) string { return c.o.Prefix + "chan:" + channel }

// Publish sends payload to every replica subscribed to channel.
func (c *Channels) Publish(ctx context.Context, channel string, payload []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	return c.rdb.Publish(ctx, c.Name(channel), payload).Err()
}

// Subscribe delivers channel's messages until stop is called (or ctx
// is done). It returns once Redis has confirmed the subscription, or ctx
// is done, or Timeout has passed; either way the subscription stands,
// and it reconnects and resubscribes by itself whenever the connection
// drops (go-redis pings it to notice). The channel is closed after stop.
// A receiver that falls behind holds the messages up in a buffer; one
// that stops receiving must call stop.
func (c *Channels) Subscribe(ctx context.Context, channel string) (<-chan []byte, func()) {
	ps := c.rdb.Subscribe(ctx, c.Name(channel))
	wait, cancel := context.WithTimeout(ctx, c.o.Timeout)
	ps.Receive(wait) // the confirmation; an error here is retried in the background
	cancel()
	in := ps.Channel()
	out := make(chan []byte, 64)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		defer ps.Close()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case m, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- []byte(m.Payload):
				case <-done:
					return
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
	return out, stop
}
