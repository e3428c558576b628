package dotcourse

import (
	"errors"
	"math"
	"testing"
)

// The CPU path needs no GPU: a CPU-only context runs these everywhere.
func TestCPUContextDotWhere(t *testing.T) {
	c, err := NewCPU(4)
	if err != nil {
		t.Fatalf("NewCPU(4): %v", err)
	}
	defer c.Close()
	for _, n := range []int{0, 1, 255, 256, 257, 4099, 1<<20 + 3} {
		x, y, ref, bound := inputs(n, int64(2800+n))
		for _, where := range []Where{CPU, Auto} {
			got, rep, err := c.DotWhere(x, y, where)
			if err != nil {
				t.Fatalf("n = %d, where %d: %v", n, where, err)
			}
			if math.Abs(float64(got)-ref) > bound {
				t.Errorf("n = %d, where %d: %v against the fp64 %v (bound %.3g)", n, where, got, ref, bound)
			}
			if rep.Path != "cpu" || rep.NCPU != n || rep.NGPU != 0 || rep.CPUThreads < 1 {
				t.Errorf("n = %d: report %+v, want the CPU with all %d elements", n, rep, n)
			}
		}
		if got, err := c.Dot(x, y); err != nil || math.Abs(float64(got)-ref) > bound {
			t.Errorf("Dot on a CPU-only context, n = %d: %v, %v", n, got, err)
		}
	}
	x := []float32{1, 2, 3}
	if _, _, err := c.DotWhere(x, x, GPU); !errors.Is(err, ErrNoGPU) {
		t.Errorf("where GPU on a CPU-only context: %v, want ErrNoGPU", err)
	}
	if _, _, err := c.DotWhere(x, x, Where(7)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("where 7: %v, want ErrInvalidArgument", err)
	}
	if _, _, err := c.DotWhere(x, x[:2], CPU); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unequal lengths: %v, want ErrInvalidArgument", err)
	}
	if err := c.Calibrate(1 << 20); !errors.Is(err, ErrNoGPU) {
		t.Errorf("Calibrate on a CPU-only context: %v, want ErrNoGPU", err)
	}
	if _, err := NewCPU(-1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NewCPU(-1): %v, want ErrInvalidArgument", err)
	}
	c.Close()
	if _, _, err := c.DotWhere(x, x, CPU); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("after Close: %v, want ErrInvalidHandle", err)
	}
}

func TestGPUContextDotWhere(t *testing.T) {
	needGPU(t)
	c, err := New(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	x, y, ref, bound := inputs(1<<20, 29)
	for _, where := range []Where{CPU, GPU, Auto} {
		got, rep, err := c.DotWhere(x, y, where)
		if err != nil || math.Abs(float64(got)-ref) > bound {
			t.Errorf("where %d: %v (%+v), %v", where, got, rep, err)
		}
	}
	if err := c.Calibrate(1 << 20); err != nil {
		t.Fatal(err)
	}
	if got, rep, err := c.DotWhere(x, y, Auto); err != nil || math.Abs(float64(got)-ref) > bound || !rep.Calibrated {
		t.Errorf("Auto after Calibrate: %v (%+v), %v", got, rep, err)
	}
}
