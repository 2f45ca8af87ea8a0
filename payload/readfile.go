package payload

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/usage"
)

// ReadFile reads the payload file at path (a regular file or a pipe).
func ReadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("read payload %s: %w", path, err)
	}
	f, err := Read(bufio.NewReader(fh), st.Size())
	if err != nil {
		return nil, fmt.Errorf("read payload %s: %w", path, err)
	}
	return f, nil
}

// ReadRawPackets reads a headerless file of the paper's element-major
// G-Binary packets (one byte per element, bit k = worker k's sign) as a
// File of workers (1 to lowbit.MaxPacketWorkers) whose element 0 has
// flattened index base. A pipe is read to its end (at most MaxElements
// bytes); bits at or above workers are an error.
func ReadRawPackets(path string, workers int, base int64) (*File, error) {
	if workers < 1 || workers > lowbit.MaxPacketWorkers {
		return nil, usage.Errorf("read payload %s: raw packets need 1 to %d workers, not %d", path, lowbit.MaxPacketWorkers, workers)
	}
	if base < 0 {
		return nil, usage.Errorf("read payload %s: base %d must be non-negative", path, base)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("read payload %s: %w", path, err)
	}
	if !st.Mode().IsRegular() { // a pipe: its size is known only at the end
		data, err := io.ReadAll(io.LimitReader(fh, MaxElements+1))
		if err != nil {
			return nil, fmt.Errorf("read payload %s: %w", path, err)
		}
		return rawFile(path, data, int64(len(data)), workers, base)
	}
	return rawFile(path, fh, st.Size(), workers, base)
}

// rawFile reads size bytes of headerless packets from src (a reader or the
// bytes already read) straight into the file's sign section.
func rawFile(path string, src any, size int64, workers int, base int64) (*File, error) {
	if size > MaxElements {
		return nil, fmt.Errorf("read payload %s: %d bytes is more than %d elements", path, size, int64(MaxElements))
	}
	h := Header{Spec: lowbit.Spec{Workers: workers, Layout: lowbit.ElementMajor, Format: lowbit.Binary}, Elements: size, Base: base}
	f := &File{Header: h, Signs: make([]byte, h.SectionBytes())}
	switch s := src.(type) {
	case []byte:
		copy(f.Signs, s)
	case io.Reader:
		if _, err := io.ReadFull(s, f.Signs[:size]); err != nil {
			return nil, fmt.Errorf("read payload %s: %w", path, err)
		}
	}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("read payload %s: %w", path, err)
	}
	return f, nil
}
