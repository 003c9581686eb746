import { defineConfig } from 'tsup';
import { libraryBuild } from '../../tsup.preset';

export default defineConfig(libraryBuild());
