package run

import "sync"

// Cache keeps the value loaded for the last key asked for, so that the
// units of a block that read the same expensive input (a data set) load it
// once while they run one after another. Units that share a Cache share
// mutable state, so they must run alone (Unit.Cores AllCores). The zero
// Cache is empty and ready to use; it is safe for concurrent use, and a
// caller asking while another loads waits for that load.
type Cache[V any] struct {
	mu  sync.Mutex
	key string
	ok  bool
	v   V
}

// Get returns the value for key: the kept one when key is the last key
// loaded, else what load returns, which it keeps when load succeeds (a
// failed load keeps nothing and leaves the previous value in place).
func (c *Cache[V]) Get(key string, load func() (V, error)) (V, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.key == key {
		return c.v, nil
	}
	v, err := load()
	if err != nil {
		var zero V
		return zero, err
	}
	c.key, c.v, c.ok = key, v, true
	return v, nil
}
