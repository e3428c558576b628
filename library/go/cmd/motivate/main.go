// Command motivate is the program that chapter 07 starts from: init once, 100 dot products of
// 2^20 random float32 on the GPU, deinit, timed against a plain Go loop.
//
//	motivate [-n 1048576] [-calls 100] [-device 0] [-csv results/local/07_library_program_go.csv]
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"dotcourse.example/ch07/dotcourse"
)

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func main() {
	n := flag.Int("n", 1<<20, "elements per vector")
	calls := flag.Int("calls", 100, "dot products")
	device := flag.Int("device", 0, "CUDA device")
	csvPath := flag.String("csv", "", "append the two rows to this CSV (written with a header if new)")
	flag.Parse()

	r := rand.New(rand.NewSource(7))
	x, y := make([]float32, *n), make([]float32, *n)
	ref := 0.0
	for i := range x {
		x[i], y[i] = float32(2*r.Float64()-1), float32(2*r.Float64()-1)
		ref += float64(x[i]) * float64(y[i])
	}
	relErr := func(got float32) float64 {
		if ref == 0 {
			return math.Abs(float64(got))
		}
		return math.Abs(float64(got)-ref) / math.Abs(ref)
	}

	t0 := time.Now()
	ctx, err := dotcourse.New(*device, *n) // init
	if err != nil {
		fmt.Fprintln(os.Stderr, "motivate:", err)
		os.Exit(3)
	}
	initMs := ms(time.Since(t0))
	var got float32
	t0 = time.Now()
	for c := 0; c < *calls; c++ {
		if got, err = ctx.Dot(x, y); err != nil {
			fmt.Fprintln(os.Stderr, "motivate:", err)
			os.Exit(1)
		}
	}
	callsMs := ms(time.Since(t0))
	t0 = time.Now()
	if err := ctx.Close(); err != nil { // deinit
		fmt.Fprintln(os.Stderr, "motivate:", err)
		os.Exit(1)
	}
	deinitMs := ms(time.Since(t0))
	gpuErr := relErr(got)

	var cpu float32
	t0 = time.Now()
	for c := 0; c < *calls; c++ {
		cpu = 0
		for i := range x {
			cpu += x[i] * y[i]
		}
	}
	cpuMs := ms(time.Since(t0))

	fmt.Printf("Go: init %.2f ms, %d × dot on %d floats %.2f ms (%.4f ms per call, rel. error %.2g), deinit %.2f ms\n",
		initMs, *calls, *n, callsMs, callsMs/float64(*calls), gpuErr, deinitMs)
	fmt.Printf("Go CPU loop: %.2f ms (%.4f ms per call, rel. error %.2g)\n", cpuMs, cpuMs/float64(*calls), relErr(cpu))
	if gpuErr > 1e-3 {
		fmt.Fprintln(os.Stderr, "motivate: the GPU result is wrong")
		os.Exit(1)
	}

	if *csvPath != "" {
		_, statErr := os.Stat(*csvPath)
		if err := os.MkdirAll(filepath.Dir(*csvPath), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "motivate:", err)
			os.Exit(2)
		}
		f, err := os.OpenFile(*csvPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "motivate:", err)
			os.Exit(2)
		}
		w := csv.NewWriter(f)
		if os.IsNotExist(statErr) {
			w.Write([]string{"language", "variant", "n", "calls", "init_ms", "calls_ms", "deinit_ms", "per_call_ms", "rel_error"})
		}
		g := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
		w.Write([]string{"Go", "c_api", strconv.Itoa(*n), strconv.Itoa(*calls), g(initMs), g(callsMs), g(deinitMs),
			g(callsMs / float64(*calls)), g(gpuErr)})
		w.Write([]string{"Go", "cpu_loop", strconv.Itoa(*n), strconv.Itoa(*calls), "0", g(cpuMs), "0",
			g(cpuMs / float64(*calls)), g(relErr(cpu))})
		w.Flush()
		f.Close()
	}
}
