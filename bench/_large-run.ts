import { largeRepoRows } from './worker-large.ts';
import { printTable, type Row } from './lib.ts';
const rows: Row[] = [];
await largeRepoRows(rows);
printTable('large', rows);
process.exit(0);
