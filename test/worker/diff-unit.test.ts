import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UnsafePath } from '../../core/contained-fs.ts';
import { copyIndex, mergeFiles, parseNameStatus, parseNumstat, readBounded } from '../../plugins/worker/diff.ts';

/** The pieces of plugins/worker/diff.ts that read what git and the workspace leave: parsers and the bounded, link-refusing reads. */
let dir = '';
test.before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'svc-diff-unit-'));
});
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

test('name-status and numstat (-z) parse every kind of entry, odd names included, and match up by position', (t) => {
  const statuses = parseNameStatus(['A', 'added.txt', 'M', 'a\tb\nc.txt', 'D', 'gone.txt', 'R087', 'old.txt', 'new.txt', 'T', 'link', ''].join('\0'));
  t.deepEqual(statuses, [
    { path: 'added.txt', status: 'added' },
    { path: 'a\tb\nc.txt', status: 'modified' },
    { path: 'gone.txt', status: 'deleted' },
    { path: 'new.txt', old_path: 'old.txt', status: 'renamed' },
    { path: 'link', status: 'modified' },
  ]);
  const counts = parseNumstat(['3\t0\tadded.txt', '1\t1\ta\tb\nc.txt', '0\t4\tgone.txt', '1\t2\t', 'old.txt', 'new.txt', '-\t-\tlink', ''].join('\0'));
  t.deepEqual(counts, [
    { path: 'added.txt', additions: 3, deletions: 0, binary: false },
    { path: 'a\tb\nc.txt', additions: 1, deletions: 1, binary: false },
    { path: 'gone.txt', additions: 0, deletions: 4, binary: false },
    { path: 'new.txt', additions: 1, deletions: 2, binary: false },
    { path: 'link', additions: 0, deletions: 0, binary: true },
  ]);
  const merged = mergeFiles(statuses, counts);
  t.deepEqual(merged[3], { path: 'new.txt', old_path: 'old.txt', status: 'renamed', additions: 1, deletions: 2, binary: false });
  t.deepEqual(
    mergeFiles(statuses.slice(0, 2), [counts[1], counts[0]]).map((f) => f.additions),
    [3, 1],
    'by name when the order disagrees',
  );
  t.deepEqual(parseNameStatus(''), []);
  t.deepEqual(parseNumstat(''), []);
  t.deepEqual(parseNameStatus('M\0'), [], 'a listing cut short (git output over its bound) ends where it was cut');
});

test('the patch is read up to the limit, cut after its last whole line, with NUL made U+FFFD; the whole size is told', async (t) => {
  const file = path.join(dir, 'patch');
  writeFileSync(file, 'line one\nline two\nline three\n');
  t.deepEqual(await readBounded(file, 1000), { text: 'line one\nline two\nline three\n', bytes: 29, truncated: false });
  t.deepEqual(await readBounded(file, 22), { text: 'line one\nline two\n', bytes: 29, truncated: true });
  t.deepEqual(await readBounded(file, 5), { text: '', bytes: 29, truncated: true }, 'no whole line fits: nothing');
  writeFileSync(file, 'a\0b\n');
  t.is((await readBounded(file, 100)).text, 'a\uFFFDb\n');
});

test('a patch file that is a link or a FIFO is refused, never followed or waited on', async (t) => {
  const target = path.join(dir, 'secret');
  writeFileSync(target, 'secret\n');
  const link = path.join(dir, 'linked-patch');
  symlinkSync(target, link);
  await t.throwsAsync(readBounded(link, 100), { instanceOf: UnsafePath, message: 'diff.patch is a symbolic link' });
  const fifo = path.join(dir, 'fifo-patch');
  execFileSync('mkfifo', [fifo]);
  await t.throwsAsync(readBounded(fifo, 100), { instanceOf: UnsafePath, message: 'diff.patch is not a regular file' });
});

test("the checkout's index is copied only when it is a plain file in a real .git folder", async (t) => {
  const checkout = (name: string) => {
    const d = path.join(dir, name);
    mkdirSync(path.join(d, '.git'), { recursive: true });
    return d;
  };
  const plain = checkout('plain');
  writeFileSync(path.join(plain, '.git', 'index'), 'DIRC index bytes');
  await copyIndex(plain, path.join(dir, 'plain.index'));
  t.is(readFileSync(path.join(dir, 'plain.index'), 'utf8'), 'DIRC index bytes');

  const secret = path.join(dir, 'host-file');
  writeFileSync(secret, 'host secret');
  const linked = checkout('linked');
  symlinkSync(secret, path.join(linked, '.git', 'index'));
  await copyIndex(linked, path.join(dir, 'linked.index'));
  t.false(existsSync(path.join(dir, 'linked.index')), 'a link is not followed');

  const fifo = checkout('fifo');
  execFileSync('mkfifo', [path.join(fifo, '.git', 'index')]);
  await copyIndex(fifo, path.join(dir, 'fifo.index'));
  t.false(existsSync(path.join(dir, 'fifo.index')), 'a FIFO is not waited on');

  const gitLink = path.join(dir, 'gitlink');
  mkdirSync(gitLink);
  symlinkSync(path.join(plain, '.git'), path.join(gitLink, '.git'));
  await copyIndex(gitLink, path.join(dir, 'gitlink.index'));
  t.false(existsSync(path.join(dir, 'gitlink.index')), 'a .git that is a link is not entered');

  // Where the copy goes, a link left in its place is not written through.
  const trap = path.join(dir, 'trap.index');
  symlinkSync(secret, trap);
  await t.throwsAsync(copyIndex(plain, trap), { code: 'EEXIST' });
  t.is(readFileSync(secret, 'utf8'), 'host secret');
});
