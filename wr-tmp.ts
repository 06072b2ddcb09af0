import { Redis } from 'ioredis';
import { RedisServer } from './test/helpers/redis-server.ts';
const srv = await RedisServer.start();
const r = new Redis(srv.url, { enableAutoPipelining: true });
const keys = Array.from({ length: 250 }, (_, i) => 'g_' + (i * 7919).toString(16).padStart(32, '0'));
const vals: string[] = [];
for (const k of keys) vals.push(k, '[1,2,1767225600000,1767230600000,3,"w_5d8dd97e3095cc89ceac3ab5f8cde303",1,1]');
await r.hset('h', ...vals);
r.defineCommand('hm', { lua: `local ks = {} for k in string.gmatch(ARGV[1], '[^\\n]+') do ks[#ks+1] = k end return table.concat(redis.call('HMGET', KEYS[1], unpack(ks)), '\\n')`, numberOfKeys: 1 });
const N = 1000;
for (let round = 0; round < 3; round++) {
  let c0 = process.cpuUsage(); let t = performance.now();
  for (let i = 0; i < N; i++) { const v = await r.hmget('h', ...keys); if (v.length !== 250) throw 1; }
  let c = process.cpuUsage(c0);
  console.log('hmget: cpu µs', ((c.user + c.system) / N).toFixed(0), 'wall µs', ((performance.now() - t) * 1000 / N).toFixed(0));
  c0 = process.cpuUsage(); t = performance.now();
  for (let i = 0; i < N; i++) { const v = (await (r as any).hm('h', keys.join('\n'))).split('\n'); if (v.length !== 250) throw 1; }
  c = process.cpuUsage(c0);
  console.log('packed: cpu µs', ((c.user + c.system) / N).toFixed(0), 'wall µs', ((performance.now() - t) * 1000 / N).toFixed(0));
}
await r.quit(); await srv.stop();
