import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { ErrorCodes } from '../protocol';

/** What an error from a request (or anything thrown) says, and whether it means "cancelled" or "no such method". */

export function errorMessage(e: unknown): string {
    if (e instanceof ResponseError) {
        return e.message;
    }
    return e instanceof Error ? e.message : String(e);
}

export function isCancelled(e: unknown): boolean {
    return e instanceof ResponseError
        ? e.code === ErrorCodes.requestCancelled
        : e instanceof vscode.CancellationError || (e instanceof Error && e.name === 'Canceled');
}

/** The server does not know the method (an older server): a feature to switch off, not an error to show. */
export function isMethodNotFound(e: unknown): boolean {
    return e instanceof ResponseError && e.code === ErrorCodes.methodNotFound;
}

/** The server refused the request's parameters (e.g. an unknown session id). */
export function isInvalidParams(e: unknown): boolean {
    return e instanceof ResponseError && e.code === ErrorCodes.invalidParams;
}
