import t from 'tap'
import { cliAction } from '../src/cli.js'
import { SETTINGS } from '../src/config.js'

t.test('no arguments serves', async (t) => {
  t.strictSame(cliAction([], '1.2.3'), { kind: 'serve' })
})

t.test('--help prints every setting with its default and exits 0, without serving', async (t) => {
  for (const flag of ['--help', '-h']) {
    const action = cliAction([flag], '1.2.3')
    t.equal(action.kind, 'print')
    if (action.kind !== 'print') continue
    t.equal(action.exitCode, 0)
    t.match(action.text, /^toolgate 1\.2\.3/)
    for (const setting of Object.values(SETTINGS)) t.match(action.text, new RegExp(`\\n  ${setting.env} `), `${flag} lists ${setting.env}`)
    t.match(action.text, /HOST .*default: unset/)
  }
})

t.test('--version prints the version and exits 0', async (t) => {
  t.strictSame(cliAction(['--version'], '1.2.3'), { kind: 'print', text: 'toolgate 1.2.3\n', exitCode: 0 })
  t.strictSame(cliAction(['-v'], '1.2.3'), { kind: 'print', text: 'toolgate 1.2.3\n', exitCode: 0 })
})

t.test('any other argument is refused with exit code 2, so a typo never starts an open service', async (t) => {
  for (const args of [['--hlep'], ['serve'], ['--help', '--version'], ['--port=9000']]) {
    const action = cliAction(args, '1.2.3')
    t.equal(action.kind, 'refuse', JSON.stringify(args))
    if (action.kind !== 'refuse') continue
    t.equal(action.exitCode, 2)
    t.match(action.text, /--help or --version/)
  }
})
