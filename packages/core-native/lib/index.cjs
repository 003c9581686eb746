'use strict';
// The package's CommonJS entry (`require('@mlxcel/core-native')`). The ESM entry index.js exports the
// same object (both come from native.cjs), so both module systems share one loaded addon.
const { api, error } = require('./native.cjs');
if (error) throw error;
module.exports = api;
