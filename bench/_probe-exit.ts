process.on('exit', () => {
  for (const k of ['__probeU', '__probeC', '__probeT']) {
    const a: number[] = ((globalThis as any)[k] ?? []).slice().sort((x: number, y: number) => x - y);
    const q = (f: number) => a.length ? a[Math.min(a.length - 1, Math.floor(f * a.length))]!.toFixed(2) : '-';
    console.error(k, 'n', a.length, 'p50', q(0.5), 'p90', q(0.9), 'max', q(1), 'sum', a.reduce((x, y) => x + y, 0).toFixed(0));
  }
});
