// CPU time of a PostgreSQL cluster that does not go backwards when a backend exits: the live processes
// of the postmaster's tree (bench/lib/processes.ts treeCpuMs) plus what the postmaster has reaped from
// children that have exited (cutime + cstime of /proc/<postmaster>/stat). treeCpuMs alone loses the
// time of a backend that exits during a measurement (an idle pooled connection closed, an autovacuum
// worker finishing), which can make a difference negative.
import { readFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { treeCpuMs } from './processes.ts';

let ticksPerSecond = 0;

export function clusterCpuMs(postmaster: number): number {
  if (!ticksPerSecond) ticksPerSecond = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  let reaped = 0;
  try {
    const stat = readFileSync(`/proc/${postmaster}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    reaped = Number(fields[13]) + Number(fields[14]);
  } catch {}
  return treeCpuMs(postmaster) + (reaped * 1000) / ticksPerSecond;
}
