import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  CodeActionRequest,
  ErrorAction,
  ExecuteCommandRequest,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { KERNEL_FILE_GLOBS, isKernelFile, shouldAdoptAsHlo } from './detect';
import { InlineRegionController } from './inlineRegionDecorations';
import {
  DEFAULT_PYTHON,
  PROBE_CODE,
  ServerCommand,
  StartProblem,
  describeCommandResult,
  diagnoseProbe,
  formatCommandLine,
  RECOMPILE_ACTION_KIND,
  RecompileArguments,
  RecompileChoice,
  recompileArguments,
  recompileChoices,
  recompileNeedsChoice,
  resolveServerCommand,
} from './serverCommand';
import { HloGraphPanel } from './graphPanel';
import { HloViews } from './viewCommands';
import { HloPassHistory } from './passHistoryView';
import { LOAD_PROFILE, PROFILE_RUNS_METHOD, loadProfileArgument, parseProfileRuns, profileNeedsChoice, runItems } from './profiles';
import { GOTO_COUNTERPART, SHOW_SUMMARY } from './views';

const CLIENT_ID = 'hlo'; // makes `hlo.trace.server` the trace setting
const CLIENT_NAME = 'HLO Language Server';
const RECOMPILE = 'hlo.recompile';

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let controller: InlineRegionController;
let views: HloViews;
let graphs: HloGraphPanel;
let passHistory: HloPassHistory;
/**
 * Our own `hlo.recompile` / `hlo.gotoCounterpart` when the server does not advertise
 * them (else vscode-languageclient registers them and the middleware below wraps them).
 */
let commandFallbacks: vscode.Disposable[] = [];
let starting: Promise<void> | undefined;
/** The server is started once an HLO document is open (activation on Plain Text must stay cheap). */
let startRequested = false;
/** The last start failed (its notification shown): a change of the server settings restarts without asking. */
let startFailed = false;

let extensionPath: string | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionPath = context.extensionPath;
  output = vscode.window.createOutputChannel(CLIENT_NAME);
  controller = new InlineRegionController(context, () => client, (m) => output.appendLine(m));
  views = new HloViews(() => client, (m) => output.appendLine(m));
  graphs = new HloGraphPanel(() => client, (m) => output.appendLine(m));
  passHistory = new HloPassHistory(() => client, (m) => output.appendLine(m));
  context.subscriptions.push(
    output,
    controller,
    views,
    graphs,
    passHistory,
    vscode.commands.registerCommand('hlo.restartServer', () => restart()),
    vscode.commands.registerCommand('hlo.toggleMetadata', () => controller.toggle()),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      const affected = ['hlo.server', 'hlo.sourceRoot', 'hlo.device', 'hlo.profile'].some((k) => e.affectsConfiguration(k));
      if (!affected || !startRequested) return;
      if (startFailed && e.affectsConfiguration('hlo.server')) {
        // the server is not running: the user is fixing the setting the notification named
        await restart();
        return;
      }
      const choice = await vscode.window.showInformationMessage(
        'HLO: the language server settings changed. Restart the server to apply them?',
        'Restart',
      );
      if (choice === 'Restart') await restart();
    }),
    { dispose: () => void stopClient() },
    vscode.workspace.onDidOpenTextDocument((doc) => onOpen(doc)),
  );
  for (const doc of vscode.workspace.textDocuments) onOpen(doc);
}

function onOpen(doc: vscode.TextDocument): void {
  if (doc.languageId === 'hlo' || (doc.uri.scheme === 'file' && isKernelFile(doc.uri.path))) {
    if (!startRequested) {
      startRequested = true;
      void startClient();
    }
    return;
  }
  const firstLine = doc.lineCount > 0 ? doc.lineAt(0).text : '';
  if (shouldAdoptAsHlo(doc.uri.path, doc.languageId, firstLine)) {
    // re-opens the document as `hlo`, which comes back here
    void vscode.languages.setTextDocumentLanguage(doc, 'hlo');
  }
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

function activeHloUri(): string | undefined {
  const editor = vscode.window.activeTextEditor;
  return editor && editor.document.languageId === 'hlo' ? editor.document.uri.toString() : undefined;
}

/**
 * *HLO: Recompile* from the palette or a menu: the server's recompile code actions at
 * the cursor (`textDocument/codeAction`, only `source.hlo.recompile`) in a QuickPick,
 * the same titles and arguments as the light bulb. The chosen arguments; `[uri]` when
 * the server offers none (or one: nothing to choose); undefined when the user cancels.
 */
async function chooseRecompile(uri: string): Promise<RecompileArguments | undefined> {
  const c = client;
  const editor = vscode.window.activeTextEditor;
  const at = editor && editor.document.uri.toString() === uri ? editor.selection.active : new vscode.Position(0, 0);
  let choices: RecompileChoice[] = [];
  try {
    const position = { line: at.line, character: at.character };
    const result = c
      ? await c.sendRequest(CodeActionRequest.type, {
          textDocument: { uri },
          range: { start: position, end: position },
          context: { diagnostics: [], only: [RECOMPILE_ACTION_KIND] },
        })
      : undefined;
    choices = recompileChoices(result, RECOMPILE);
  } catch (err) {
    output.appendLine(`hlo.recompile: the server's choices failed: ${String(err)}`);
  }
  if (choices.length === 0) return [uri];
  if (choices.length === 1) return choices[0].arguments;
  const picked = await vscode.window.showQuickPick(
    choices.map((choice) => ({ label: choice.title, choice })),
    { placeHolder: 'HLO: how to recompile this dump', title: 'HLO: Recompile' },
  );
  return picked?.choice.arguments;
}

/**
 * Runs `hlo.recompile` on the server; `send` is languageclient's `next` or a direct
 * request. A code action's arguments (`[uri, {"target": "h100"}]`) go on whole; from
 * the palette or a menu the user first picks one of the server's choices.
 */
async function runRecompile(args: unknown[], send: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
  let commandArgs = recompileArguments(args, activeHloUri());
  if (!commandArgs) {
    void vscode.window.showWarningMessage('HLO: open an HLO file to recompile.');
    return undefined;
  }
  if (recompileNeedsChoice(args)) {
    commandArgs = await chooseRecompile(commandArgs[0]);
    if (!commandArgs) return undefined; // the QuickPick was dismissed
  }
  try {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'HLO: recompiling' },
      () => send(commandArgs),
    );
    // The server already shows a notification (window/showMessage); the whole
    // report goes to the output channel, shown beside the editor.
    const text = describeCommandResult(result);
    if (text) {
      output.appendLine(`hlo.recompile:\n${text}`);
      output.show(true);
    }
    return result;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    output.appendLine(`hlo.recompile failed: ${message}`);
    void vscode.window.showErrorMessage(`HLO: recompile failed: ${message}`);
    return undefined;
  }
}

/**
 * *HLO: Load Profile...* from the palette: where the profiles are (beside this dump, or a
 * folder the user picks, the dump's directory first), the server's runs there
 * (`hlo/profileRuns`), one of several picked (newest first), then the server command
 * `hlo.loadProfile` with it. The server shows what it loaded (window/showMessage) and
 * refreshes the code lenses. Arguments that name a directory go to the server as they are.
 */
async function runLoadProfile(args: unknown[], send: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
  const active = activeHloUri();
  const given = loadProfileArgument(args) ?? (active ? { uri: active } : undefined);
  if (!given) {
    void vscode.window.showWarningMessage('HLO: open an HLO file to load a profile for it.');
    return undefined;
  }
  const path = profileNeedsChoice(args) ? await chooseProfile(given.uri) : given.path;
  if (path === null) return undefined; // dismissed
  try {
    return await send([path ? { uri: given.uri, path } : { uri: given.uri }]);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    output.appendLine(`hlo.loadProfile failed: ${message}`);
    void vscode.window.showErrorMessage(`HLO: loading the profile failed: ${message}`);
    return undefined;
  }
}

/** The run (or directory) to load for `uri`: undefined for the default place, null when the user cancels. */
async function chooseProfile(uri: string): Promise<string | undefined | null> {
  const title = 'HLO: Load Profile';
  const setting = vscode.workspace.getConfiguration('hlo').get<string>('profile', '');
  const where = await vscode.window.showQuickPick(
    [
      { label: 'Beside this dump', description: setting ? `hlo.profile: ${setting}` : 'the dump directory, its folders and its parent', browse: false },
      { label: 'Choose a Folder...', description: 'a dump directory, a folder holding plugins/profile/, or one run', browse: true },
    ],
    { title, placeHolder: 'Where are the profiles of jax.profiler.trace?' },
  );
  if (!where) return null;
  let dir: string | undefined;
  if (where.browse) {
    const doc = vscode.Uri.parse(uri);
    const picked = await vscode.window.showOpenDialog({
      canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel: 'Load Profile', title,
      defaultUri: doc.scheme === 'file' ? vscode.Uri.joinPath(doc, '..') : undefined,
    });
    if (!picked?.length) return null;
    dir = picked[0].fsPath;
  }
  let found;
  try {
    found = parseProfileRuns(await client?.sendRequest(PROFILE_RUNS_METHOD, { textDocument: { uri }, path: dir }));
  } catch (err) {
    output.appendLine(`${PROFILE_RUNS_METHOD} failed: ${String(err)}`);
  }
  // none there: the server's command says so; one: nothing to choose
  if (!found || found.runs.length <= 1) return found?.runs[0]?.path ?? dir;
  const picked = await vscode.window.showQuickPick(runItems(found), {
    title, placeHolder: `${found.runs.length} profile runs: which one? (newest first)`, matchOnDetail: true,
  });
  return picked ? picked.run.path : null;
}

function pythonPathIsExplicit(cfg: vscode.WorkspaceConfiguration): boolean {
  const i = cfg.inspect<string>('server.pythonPath');
  return i?.globalValue !== undefined || i?.workspaceValue !== undefined || i?.workspaceFolderValue !== undefined;
}

function withTimeout<T>(p: Thenable<T>, ms: number): Promise<T | undefined> {
  return Promise.race([Promise.resolve(p), new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
}

/** The interpreter selected in the Python extension, if it is installed (optional nicety). */
async function pythonFromPythonExtension(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension('ms-python.python');
  if (!ext) return undefined;
  try {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const api: any = ext.isActive ? ext.exports : await withTimeout(ext.activate(), 5000);
    const envs = api?.environments;
    if (!envs?.getActiveEnvironmentPath) return undefined;
    const resource = vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    const active = envs.getActiveEnvironmentPath(resource);
    const resolved = await withTimeout(envs.resolveEnvironment(active), 5000);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const exe = (resolved as any)?.executable?.uri?.fsPath;
    return typeof exe === 'string' && exe ? exe : undefined;
  } catch (err) {
    output.appendLine(`Python extension interpreter lookup failed: ${String(err)}`);
    return undefined;
  }
}

/**
 * The server's working directory: the first workspace folder. The probes below run
 * there too: `python -c` imports from its working directory, so a probe run in the
 * extension host's (code-server's: wherever it was started, e.g. a checkout) could
 * import a hlo_lsp that `python -m hlo_lsp` in the workspace folder does not find.
 */
function serverCwd(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder || folder.scheme !== 'file') return undefined;
  try {
    return fs.statSync(folder.fsPath).isDirectory() ? folder.fsPath : undefined;
  } catch {
    return undefined; // a spawn in a missing directory fails as if the interpreter were missing
  }
}

/** Runs `python -c PROBE_CODE`: the spawn error code or exit status, and the output. */
function probeServer(python: string): Promise<{ errorCode?: string | number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE_CODE], { timeout: 20000, cwd: serverCwd() }, (err, stdout, stderr) => {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const code = err ? ((err as any).code ?? 1) : undefined;
      resolve({ errorCode: code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** A directory holding hlo-lsp's pyproject.toml: this extension's checkout or a workspace folder. */
function findCheckout(): string | undefined {
  const candidates = [
    extensionPath ? nodePath.resolve(extensionPath, '..', '..') : undefined,
    ...(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
  ];
  for (const dir of candidates) {
    if (!dir) continue;
    try {
      const text = fs.readFileSync(nodePath.join(dir, 'pyproject.toml'), 'utf8');
      if (/^name\s*=\s*"hlo-lsp"/m.test(text)) return dir;
    } catch {
      // not a checkout
    }
  }
  return undefined;
}

let problemShown = false;

/**
 * The one notification of a server that cannot start: the cause, and buttons that fix it
 * (select an interpreter through the Python extension when it is installed, install
 * from the checkout, open the settings). Shown once until the next (re)start.
 */
async function showStartProblem(python: string, problem: StartProblem): Promise<void> {
  output.appendLine(`The server cannot start: ${problem.message}`);
  if (problemShown) return;
  problemShown = true;
  const actions: string[] = [];
  const hasPython = !!vscode.extensions.getExtension('ms-python.python');
  if (hasPython) actions.push('Select Interpreter');
  const checkout = problem.cause === 'no-interpreter' ? undefined : findCheckout();
  if (checkout) actions.push('Install from Checkout');
  actions.push('Open Settings');
  const hint = problem.cause === 'no-interpreter'
    ? 'Set `hlo.server.pythonPath` to a Python 3.11+ interpreter.'
    : checkout
      ? `Install it from ${checkout} (\`${python} -m pip install -e ${checkout}\`).`
      : 'Install it from a checkout of hlo-lsp (`pip install -e <checkout>`), or set `hlo.server.path`.';
  const choice = await vscode.window.showErrorMessage(`HLO: the language server cannot start: ${problem.message}. ${hint}`, ...actions);
  if (choice === 'Select Interpreter') {
    await vscode.commands.executeCommand('python.setInterpreter');
    await restart();
  } else if (choice === 'Install from Checkout' && checkout) {
    const terminal = vscode.window.createTerminal('HLO: install hlo-lsp');
    terminal.show();
    terminal.sendText(`${JSON.stringify(python)} -m pip install -e ${JSON.stringify(checkout)}`);
  } else if (choice === 'Open Settings') {
    void vscode.commands.executeCommand('workbench.action.openSettings', 'hlo.server');
  }
}

/**
 * Why `python -m hlo_lsp` exited at start although the probe imported hlo_lsp (its
 * dependencies missing, e.g. a checkout on PYTHONPATH or `pip install --no-deps`):
 * the last line of `python -c "import hlo_lsp.lsp.server"`, else undefined.
 */
function serverImportError(python: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(python, ['-c', 'import hlo_lsp.lsp.server'], { timeout: 20000, cwd: serverCwd() }, (err, _stdout, stderr) => {
      resolve(err ? String(stderr).trim().split('\n').pop() || undefined : undefined);
    });
  });
}

/**
 * languageclient forces a notification of its own ("couldn't create connection to
 * server") when the server fails to start; the extension shows one that names the
 * cause instead (showStartProblem), so that one is only logged.
 */
class HloLanguageClient extends LanguageClient {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override error(message: string, data?: any, showNotification: boolean | 'force' = true): void {
    const startFailure = message.includes("couldn't create connection to server");
    super.error(message, data, startFailure ? false : showNotification);
  }
}

/** True when `python -c "import hlo_lsp"` succeeds within a few seconds. */
function canImportServer(python: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ['-c', 'import hlo_lsp'], { timeout: 10000, cwd: serverCwd() }, (err) => resolve(!err));
  });
}

async function serverCommand(): Promise<ServerCommand> {
  const cfg = vscode.workspace.getConfiguration('hlo');
  const path = cfg.get<string>('server.path', '');
  const extraArgs = cfg.get<unknown>('server.extraArgs', []);
  let pythonPath = cfg.get<string>('server.pythonPath', DEFAULT_PYTHON);
  if (!path.trim() && !pythonPathIsExplicit(cfg)) {
    // Not set by the user: prefer the Python extension's interpreter when hlo_lsp imports there.
    const candidates = [await pythonFromPythonExtension(), DEFAULT_PYTHON, process.platform === 'win32' ? 'python' : undefined];
    for (const candidate of candidates) {
      if (candidate && (await canImportServer(candidate))) {
        pythonPath = candidate;
        break;
      }
    }
  }
  return resolveServerCommand({ path, pythonPath, extraArgs });
}

/** `hlo.sourceRoot` (empty entries dropped), `hlo.device` and `hlo.profile` (when set) as the server's `sourceRoot`, `device` and `profile`. */
function initializationOptions(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration('hlo');
  const value = cfg.get<unknown>('sourceRoot', '');
  const roots = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string' && v.trim() !== '');
  const options: Record<string, unknown> = roots.length ? { sourceRoot: roots.length === 1 ? roots[0] : roots } : {};
  const device = cfg.get<string>('device', '');
  if (device) options.device = device;
  const profile = cfg.get<string>('profile', '');
  if (profile.trim()) options.profile = profile.trim();
  return options;
}

async function startClient(): Promise<void> {
  if (starting) return starting;
  starting = doStart().finally(() => (starting = undefined));
  return starting;
}

/**
 * True when the settings now name another server command than `cmd`: the settings
 * changed while `cmd` was being tried (a remote window such as code-server can hand the
 * user's settings to the extension host after activation). The caller starts again
 * instead of reporting a problem of a command the user no longer asks for.
 */
async function commandChanged(cmd: ServerCommand): Promise<boolean> {
  const now = await serverCommand();
  if (formatCommandLine(now) === formatCommandLine(cmd)) return false;
  output.appendLine(`The settings changed while starting (now: ${formatCommandLine(now)}); starting again`);
  return true;
}

async function doStart(): Promise<void> {
  // Two tries at most: the second when the settings changed during the first.
  for (let attempt = 0; ; attempt++) {
    const outcome = await tryStart(attempt === 0);
    if (outcome !== 'retry') {
      startFailed = outcome === 'failed';
      return;
    }
  }
}

/** One start with the current settings; 'retry' when they changed meanwhile (first try only). */
async function tryStart(mayRetry: boolean): Promise<'started' | 'failed' | 'retry'> {
  const cmd = await serverCommand();
  output.appendLine(`Starting: ${formatCommandLine(cmd)}`);
  if (cmd.args[0] === '-m' && cmd.args[1] === 'hlo_lsp') {
    // Before languageclient tries (and stacks its own toasts): can this Python run the server?
    const problem = diagnoseProbe(cmd.command, await probeServer(cmd.command));
    if (problem) {
      if (mayRetry && (await commandChanged(cmd))) return 'retry';
      await showStartProblem(cmd.command, problem);
      return 'failed';
    }
  }
  const run: Executable = {
    command: cmd.command,
    args: cmd.args,
    transport: TransportKind.stdio,
    options: { cwd: serverCwd(), env: process.env },
  };
  const serverOptions: ServerOptions = { run, debug: run };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'hlo' },
      { scheme: 'untitled', language: 'hlo' },
      // A kernel's PTX / LLVM IR in a dump, in its own language: definition and hover (detect.ts).
      ...KERNEL_FILE_GLOBS.map((pattern) => ({ scheme: 'file', pattern })),
    ],
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    // Settings the server reads at initialize (docs/protocol.md, "Settings").
    initializationOptions: initializationOptions(),
    // One notification of ours instead of languageclient's stacked ones.
    initializationFailedHandler: (err) => {
      output.appendLine(`Initialization failed: ${String(err)}`);
      return false;
    },
    errorHandler: {
      error: (err) => {
        output.appendLine(`Connection error: ${String(err)}`);
        return { action: ErrorAction.Shutdown, handled: true };
      },
      closed: () => {
        output.appendLine('The server stopped. Restart it with "HLO: Restart Language Server".');
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
    middleware: {
      // Server commands that need the editor: `hlo.recompile` from the palette or a menu
      // (supply the document uri), `hlo.showSummary` from the code lens (show the answer,
      // which languageclient would drop), `hlo.gotoCounterpart` (ask `hlo/counterpart`
      // for the cursor and go there), `hlo.loadProfile` from the palette (choose the run).
      executeCommand: (command, args, next) => {
        const send = (a: unknown[]) => Promise.resolve(next(command, a));
        if (command === RECOMPILE) return runRecompile(args, send);
        if (command === LOAD_PROFILE) return runLoadProfile(args, send);
        if (command === SHOW_SUMMARY) return views.runShowSummary(args, send);
        if (command === GOTO_COUNTERPART) return views.gotoCounterpart(args);
        return next(command, args);
      },
    },
  };
  const c = new HloLanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  client = c;
  passHistory.listen(c); // the server's hlo/passHistoryChanged (disposed with the client)
  c.onDidChangeState((e) => {
    if (e.newState === State.Running) controller.invalidateAll();
  });
  let failure: string | undefined;
  try {
    await c.start();
    // start() resolves without an error when the server exited during initialize
    if (c.state !== State.Running) failure = 'the server exited at start';
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
  }
  if (failure !== undefined) {
    if (mayRetry && (await commandChanged(cmd))) {
      await stopClient();
      return 'retry';
    }
    const cause = cmd.args[0] === '-m' && cmd.args[1] === 'hlo_lsp' ? await serverImportError(cmd.command) : undefined;
    await showStartProblem(cmd.command, {
      cause: 'broken',
      message: `\`${formatCommandLine(cmd)}\` failed: ${cause ?? failure} (its output is in Output → ${CLIENT_NAME})`,
    });
    return 'failed';
  }
  const advertised = c.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  if (!advertised.includes(RECOMPILE)) {
    commandFallbacks.push(
      vscode.commands.registerCommand(RECOMPILE, (...args: unknown[]) =>
        runRecompile(args, (a) => Promise.resolve(c.sendRequest(ExecuteCommandRequest.type, { command: RECOMPILE, arguments: a }))),
      ),
    );
  }
  if (!advertised.includes(LOAD_PROFILE)) {
    commandFallbacks.push(
      vscode.commands.registerCommand(LOAD_PROFILE, (...args: unknown[]) =>
        runLoadProfile(args, (a) => Promise.resolve(c.sendRequest(ExecuteCommandRequest.type, { command: LOAD_PROFILE, arguments: a }))),
      ),
    );
  }
  if (!advertised.includes(GOTO_COUNTERPART)) {
    // the request `hlo/counterpart` is what the command uses anyway
    commandFallbacks.push(vscode.commands.registerCommand(GOTO_COUNTERPART, (...args: unknown[]) => views.gotoCounterpart(args)));
  }
  controller.invalidateAll();
  return 'started';
}

async function stopClient(): Promise<void> {
  for (const d of commandFallbacks) d.dispose();
  commandFallbacks = [];
  const c = client;
  client = undefined;
  if (!c) return;
  try {
    await c.dispose(3000); // stops the server if it runs
  } catch (err) {
    output.appendLine(`Stopping the server failed: ${String(err)}`);
  }
}

async function restart(): Promise<void> {
  problemShown = false;
  output.appendLine('Restarting the HLO language server');
  if (starting) await starting;
  await stopClient();
  startRequested = true;
  await startClient();
}
