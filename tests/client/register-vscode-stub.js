'use strict';
// Loaded with `node --require`: makes `require('vscode')` resolve to the stand-in in this folder.
const Module = require('module');
const path = require('path');

const stubPath = path.join(__dirname, 'vscode-stub.js');
const original = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
    if (request === 'vscode') {
        return stubPath;
    }
    return original.call(this, request, ...rest);
};
