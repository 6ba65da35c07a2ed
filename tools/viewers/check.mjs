// check.mjs: loads rearview's Chrome JSON traces into speedscope (the npm
// package, pinned in package-lock.json) in Debian's headless Chromium, the
// way a user opens them, and fails on anything the viewer complains about.
//
//   node tools/viewers/check.mjs OUTDIR NAME=TRACE.json:FUNC,FUNC... ...
//
// For each trace: a local server on 127.0.0.1 serves speedscope's built app
// and the trace; the page opens index.html#profileURL=<the trace>; every
// console warning or error and every page error is counted and printed. Then
// the script presses Ctrl+S, speedscope's own "export", and reads the
// profile speedscope built (its frames and open/close events) from the
// download: the names there are what speedscope imported, not what the file
// says. The trace passes when there were no warnings or errors, the export
// has events, and its frame names include every FUNC (a frame matches when
// its name is FUNC or starts with "FUNC(" or "FUNC " : C++ names carry their
// parameters, and speedscope appends the span's arguments). A screenshot of
// the flame chart goes to OUTDIR/NAME.png.
//
// It prints one line per trace and exits 1 when any trace failed, 2 on a
// usage or set-up error (no Chromium, no packages). Not here: building the
// traces (mk/viewers.mk does), or checking FXT (tools/fxtcheck).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const chromium_path = process.env.CHROMIUM || '/usr/bin/chromium';
const load_timeout_ms = 20000;

function usage(msg) {
	console.error(`check-viewers: ${msg}`);
	console.error('usage: check.mjs OUTDIR NAME=TRACE.json:FUNC[,FUNC...] ...');
	process.exit(2);
}

function parse_specs(args) {
	return args.map((arg) => {
		const m = /^([A-Za-z0-9_-]+)=([^:]+):(.+)$/.exec(arg);
		if (!m)
			usage(`cannot read '${arg}'`);
		return { name: m[1], file: path.resolve(m[2]), functions: m[3].split(',') };
	});
}

async function load_playwright() {
	try {
		return await import('playwright-core');
	} catch (e) {
		usage(`playwright-core is not installed in ${here}/node_modules: run 'make deps'`);
	}
}

const mime = {
	'.html': 'text/html',
	'.js': 'text/javascript',
	'.css': 'text/css',
	'.json': 'application/json',
	'.wasm': 'application/wasm',
	'.png': 'image/png',
	'.ico': 'image/x-icon',
	'.woff2': 'font/woff2',
	'.txt': 'text/plain',
};

// Serves /app/ from speedscope's release directory and /trace/NAME.json from
// the traces named on the command line; nothing else.
function start_server(app_dir, traces) {
	const server = http.createServer((req, res) => {
		const url = new URL(req.url, 'http://127.0.0.1');
		let file = null;
		if (url.pathname.startsWith('/app/')) {
			const rel = path.normalize(decodeURIComponent(url.pathname.slice(5)));
			if (!rel.startsWith('..'))
				file = path.join(app_dir, rel || 'index.html');
		} else if (url.pathname.startsWith('/trace/')) {
			const t = traces.get(decodeURIComponent(url.pathname.slice(7)).replace(/\.json$/, ''));
			if (t)
				file = t.file;
		}
		if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
			res.writeHead(404);
			res.end();
			return;
		}
		res.writeHead(200, {
			'Content-Type': mime[path.extname(file)] || 'application/octet-stream',
		});
		fs.createReadStream(file).pipe(res);
	});
	return new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => resolve(server));
	});
}

// Frame names of the profile speedscope exported, and its events.
function read_export(text) {
	const exported = JSON.parse(text);
	const names = new Set(exported.shared.frames.map((f) => f.name));
	let events = 0;
	for (const p of exported.profiles)
		events += p.events ? p.events.length : p.samples ? p.samples.length : 0;
	return { names, events, profiles: exported.profiles.length };
}

function has_function(names, fn) {
	for (const n of names)
		if (n === fn || n.startsWith(fn + '(') || n.startsWith(fn + ' '))
			return true;
	return false;
}

async function check_one(browser, base, spec, out_dir) {
	const page = await browser.newPage({ viewport: { width: 1600, height: 900 }, acceptDownloads: true });
	const complaints = [];
	page.on('console', (msg) => {
		if (msg.type() === 'warning' || msg.type() === 'error')
			complaints.push(`${msg.type()}: ${msg.text()}`);
	});
	page.on('pageerror', (err) => complaints.push(`page error: ${err.message}`));
	const trace_url = `${base}/trace/${encodeURIComponent(spec.name)}.json`;
	await page.goto(`${base}/app/index.html#profileURL=${encodeURIComponent(trace_url)}`);
	// speedscope shows its toolbar's "Export" once a profile is loaded.
	await page.getByText('Export', { exact: false }).first().waitFor({ timeout: load_timeout_ms });
	await page.waitForTimeout(300);
	const png = path.join(out_dir, `${spec.name}.png`);
	await page.screenshot({ path: png });
	const [download] = await Promise.all([
		page.waitForEvent('download', { timeout: load_timeout_ms }),
		page.keyboard.press('Control+s'),
	]);
	const exported = read_export(fs.readFileSync(await download.path(), 'utf8'));
	await page.close();
	const missing = spec.functions.filter((fn) => !has_function(exported.names, fn));
	return { complaints, exported, missing, png };
}

async function main() {
	const args = process.argv.slice(2);
	if (args.length < 2)
		usage('no traces given');
	const out_dir = path.resolve(args[0]);
	const specs = parse_specs(args.slice(1));
	for (const s of specs)
		if (!fs.existsSync(s.file))
			usage(`${s.file} does not exist`);
	if (!fs.existsSync(chromium_path))
		usage(`${chromium_path} is missing: run 'make deps' (Debian's chromium)`);
	const app_dir = path.join(here, 'node_modules', 'speedscope', 'dist', 'release');
	if (!fs.existsSync(path.join(app_dir, 'index.html')))
		usage(`speedscope is not installed in ${here}/node_modules: run 'make deps'`);
	const { chromium } = await load_playwright();
	fs.mkdirSync(out_dir, { recursive: true });

	const server = await start_server(app_dir, new Map(specs.map((s) => [s.name, s])));
	const base = `http://127.0.0.1:${server.address().port}`;
	const browser = await chromium.launch({
		executablePath: chromium_path,
		args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
	});
	let failed = 0;
	try {
		for (const spec of specs) {
			let r;
			try {
				r = await check_one(browser, base, spec, out_dir);
			} catch (e) {
				console.log(`check-viewers: ${spec.name}: FAILED: speedscope did not load it: ${e.message.split('\n')[0]}`);
				failed++;
				continue;
			}
			const ok = r.complaints.length === 0 && r.exported.events > 0 && r.missing.length === 0;
			console.log(`check-viewers: ${spec.name}: ${ok ? 'ok' : 'FAILED'}: ` +
				`${r.exported.events} events, ${r.exported.names.size} frames, ` +
				`${r.exported.profiles} profiles, ${r.complaints.length} warnings, ${r.png}`);
			if (r.missing.length)
				console.log(`  frames missing: ${r.missing.join(', ')}`);
			for (const c of r.complaints.slice(0, 5))
				console.log(`  ${c.length > 200 ? c.slice(0, 200) + '...' : c}`);
			if (r.complaints.length > 5)
				console.log(`  ... and ${r.complaints.length - 5} more`);
			if (!ok)
				failed++;
		}
	} finally {
		await browser.close();
		server.close();
	}
	process.exit(failed ? 1 : 0);
}

main().catch((e) => {
	console.error(`check-viewers: ${e.message}`);
	process.exit(2);
});
