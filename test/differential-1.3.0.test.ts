/** The differential table (test/helpers/differential-table.ts) on Bun 1.3.0, a file of its own to run beside the others. */
import { defineDifferentialTable } from "./helpers/differential-table.ts";

defineDifferentialTable("1.3.0");
