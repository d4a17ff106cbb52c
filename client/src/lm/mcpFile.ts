import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { McpPlan, McpServerEntry, planMcpConfig } from './mcpConfig';

/**
 * Reads and writes `<folder>/.vscode/mcp.json` for the "add memory server" command, as carefully as the
 * server treats memory files: a cloned repository may make `.vscode` or `mcp.json` a link to a file of
 * yours, a FIFO or a huge file, so links and non-regular files are refused, the read is bounded, and the
 * write is atomic (a temp file renamed over the old one) after checking nobody changed the file meanwhile.
 */

/** Larger than any real MCP configuration; a bigger file is refused rather than read. */
export const MAX_MCP_FILE = 1024 * 1024;

export class McpFileError extends Error {}

export interface McpFileText {
    /** Undefined when the file does not exist yet. */
    text: string | undefined;
    /** A UTF-8 byte order mark the file starts with (kept on write). */
    bom: boolean;
    mode?: number;
}

export type McpOutcome =
    | { kind: 'added' | 'replaced' | 'unchanged'; file: string }
    | { kind: 'cancelled'; file: string }
    | { kind: 'invalid'; file: string; reason: string };

export function mcpPaths(folder: string): { dir: string; file: string } {
    const dir = path.join(folder, '.vscode');
    return { dir, file: path.join(dir, 'mcp.json') };
}

function lstatOrUndefined(p: string): fs.Stats | undefined {
    try {
        return fs.lstatSync(p);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
            return undefined;
        }
        throw e;
    }
}

/** The folder's `.vscode`, refused when it is a link or not a folder; undefined when it does not exist. */
function checkDir(dir: string): fs.Stats | undefined {
    const st = lstatOrUndefined(dir);
    if (st?.isSymbolicLink()) {
        throw new McpFileError(`${dir} is a symbolic link: refused (it could lead to a file outside the folder).`);
    }
    if (st && !st.isDirectory()) {
        throw new McpFileError(`${dir} is not a folder.`);
    }
    return st;
}

/** The current text of mcp.json: never through a link, never from a FIFO or device, never more than MAX_MCP_FILE. */
export function readMcpFile(folder: string): McpFileText {
    const { dir, file } = mcpPaths(folder);
    if (!checkDir(dir)) {
        return { text: undefined, bom: false };
    }
    let fd: number;
    try {
        fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') {
            return { text: undefined, bom: false };
        }
        if (code === 'ELOOP') {
            throw new McpFileError(`${file} is a symbolic link: refused (it could lead to a file outside the folder).`);
        }
        throw new McpFileError(`${file} cannot be read: ${(e as Error).message}`);
    }
    try {
        const st = fs.fstatSync(fd);
        if (!st.isFile()) {
            throw new McpFileError(`${file} is not a regular file.`);
        }
        if (st.size > MAX_MCP_FILE) {
            throw new McpFileError(`${file} is ${st.size} bytes, more than an MCP configuration can be (${MAX_MCP_FILE}).`);
        }
        const buf = Buffer.alloc(Math.min(st.size, MAX_MCP_FILE) + 1);
        let read = 0;
        for (;;) {
            const n = fs.readSync(fd, buf, read, buf.length - read, read);
            if (n === 0) {
                break;
            }
            read += n;
            if (read >= buf.length) {
                throw new McpFileError(`${file} grew while it was read: try again.`);
            }
        }
        let text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buf.subarray(0, read), { stream: false });
        const bom = text.startsWith('\uFEFF');
        if (bom) {
            text = text.slice(1);
        }
        return { text, bom, mode: st.mode & 0o777 };
    } catch (e) {
        if (e instanceof McpFileError) {
            throw e;
        }
        throw new McpFileError(`${file} cannot be read as UTF-8 text: ${(e as Error).message}`);
    } finally {
        fs.closeSync(fd);
    }
}

/** Writes `text` atomically, unless the file no longer holds `expected` (another writer came first). */
export function writeMcpFile(folder: string, text: string, before: McpFileText): void {
    const { dir, file } = mcpPaths(folder);
    if (!checkDir(dir)) {
        fs.mkdirSync(dir);
        checkDir(dir);
    }
    const now = readMcpFile(folder);
    if (now.text !== before.text) {
        throw new McpFileError(`${file} changed while it was being edited: nothing was written; try again.`);
    }
    const tmp = path.join(dir, `.mcp.json.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`);
    const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, before.mode ?? 0o644);
    try {
        fs.writeSync(fd, (before.bom ? '\uFEFF' : '') + text);
        fs.fsyncSync(fd);
        fs.closeSync(fd);
        fs.renameSync(tmp, file);
    } catch (e) {
        try {
            fs.closeSync(fd);
        } catch {
            // closed already
        }
        fs.rmSync(tmp, { force: true });
        throw new McpFileError(`${file} could not be written: ${(e as Error).message}`);
    }
}

/**
 * Adds (or, when `confirmReplace` agrees, replaces) our server in the folder's mcp.json. Every other entry,
 * comment and the formatting are kept; a file that cannot be parsed is left exactly as it is.
 */
export async function addMcpServer(
    folder: string,
    entry: McpServerEntry,
    confirmReplace: (existing: unknown) => Promise<boolean>,
): Promise<McpOutcome> {
    const { file } = mcpPaths(folder);
    const before = readMcpFile(folder);
    const plan: McpPlan = planMcpConfig(before.text, entry);
    switch (plan.kind) {
        case 'unchanged':
            return { kind: 'unchanged', file };
        case 'invalid':
            return { kind: 'invalid', file, reason: plan.reason };
        case 'conflict':
            if (!(await confirmReplace(plan.existing))) {
                return { kind: 'cancelled', file };
            }
            writeMcpFile(folder, plan.text, before);
            return { kind: 'replaced', file };
        case 'add':
            writeMcpFile(folder, plan.text, before);
            return { kind: 'added', file };
    }
}
